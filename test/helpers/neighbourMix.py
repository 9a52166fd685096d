# A neighbour mix as Python's http.client sends it (test/helpers/neighbourMix.ts): `total` GETs over
# `connections` kept-alive connections, one thread each, every `every`-th to `faulty`, the rest to
# Echo with a number of their own. Prints each answer as JSON, its body as it came, byte for byte.
import http.client, json, sys, threading, time
from urllib.parse import urlsplit

base, faulty, total, every, connections = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
host = urlsplit(base)
outcomes = [None] * total

def path_of(i):
    return '/External/%s%sn=%d' % (faulty, '&' if '?' in faulty else '?', i) if i % every == every - 1 else '/External/Echo?n=%d' % i

def run(first):
    conn = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
    for i in range(first, total, connections):
        status, headers, body, cut, cut_ms = 0, {}, b'', False, None
        try:
            conn.request('GET', path_of(i))
            answer = conn.getresponse()
            status, headers = answer.status, {k.lower(): v for k, v in answer.getheaders()}
            head_at = time.monotonic()
            try:
                body = answer.read()
            except http.client.IncompleteRead as short:
                body, cut, cut_ms = short.partial, True, (time.monotonic() - head_at) * 1000
            if answer.will_close or cut:
                conn.close()
        except (http.client.HTTPException, OSError) as error:
            # A broken answer or connection: nothing of it is kept, and the next request opens a new one.
            cut, headers = True, {'x-client-error': repr(error)}
            conn.close()
        outcomes[i] = {'i': i, 'faulty': i % every == every - 1, 'status': status, 'headers': headers,
                       'body': body.decode('latin-1'), 'cut': cut, 'cutMs': cut_ms}
    conn.close()

threads = [threading.Thread(target=run, args=(k,)) for k in range(connections)]
for thread in threads: thread.start()
for thread in threads: thread.join()
json.dump(outcomes, sys.stdout)
