// What crosses the proxy on the way to the host and back, for each forwarding engine (the same
// conformance suite for both): headers, failures and their status codes, clients that leave.
import { createServer, type Server } from 'node:http';
import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { curl } from '../helpers/clients.ts';
import { requirePhpCgi } from '../helpers/php.ts';
import { get } from '../helpers/http.ts';
import { FORWARDERS } from '../../common/settings.ts';
import {
  callMarker,
  eventually,
  makeSandbox,
  readLog,
  startProxy,
  startStack,
  writtenText,
  type Running,
  type Sandbox,
} from '../helpers/stack.ts';

/** Sends `raw` bytes (ending in `Connection: close`) and resolves with all the server sent until it closed. */
function rawExchange(url: string, raw: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(raw));
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
  });
}

for (const forwarder of FORWARDERS) {
  describe(`forwarding to the host (${forwarder})`, function () {
    let sandbox: Sandbox;
    let stack: Running;

    before(async function () {
      sandbox = makeSandbox();
      writeFileSync(join(sandbox.controllers, 'Headers.ts'), `export default ({ headers, requestId }: any) => ({ headers, requestId });\n`);
      stack = await startStack(sandbox, ['--workers', '1', '--forwarder', forwarder]);
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    it('answers an HTTP/1.0 request without Host from its controller, as Apache serves one', async function () {
      const response = await rawExchange(stack.url, 'GET /External/Headers HTTP/1.0\r\n\r\n');
      expect(response).to.match(/^HTTP\/1\.1 200 OK\r\n/);
      expect(response).to.match(/"requestId":"[0-9a-f-]{36}"/);
    });

    it("passes a POST's Content-Length: 0 on to the controller", async function () {
      const response = await rawExchange(
        stack.url,
        'POST /External/Headers HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
      );
      expect(response).to.match(/^HTTP\/1\.1 200 OK\r\n/);
      expect(response).to.match(/"content-length":"0"/);
    });

    it('survives a Trailer header on a GET (node-http-proxy #1647) and keeps serving', async function () {
      const response = await rawExchange(
        stack.url,
        'GET /External/Headers HTTP/1.1\r\nHost: x\r\nTrailer: cookie\r\nConnection: close\r\n\r\n',
      );
      expect(response).to.match(/^HTTP\/1\.1 200 OK\r\n/);
      expect(response).not.to.match(/"trailer"/);
      expect((await get(stack.url, '/External/Headers')).status).to.equal(200);
    });

    describe('when the name is one no controller can have', function () {
      const refused = [
        ['/External/Echo%2fx', 'AH00026'],
        ['/External/..%2f..%2fpublic%2findex', 'AH00026'],
        ['/External/Latest%00', 'AH00026'],
        ['/External/Latest/a%2fb', 'AH00026'],
        ['/External/a.b', 'AH00128'],
        ['/External/9lives', 'AH00128'],
      ] as const;
      it("answers curl 404 with Apache's page and line, and never asks the host", async function () {
        const ids: string[] = [];
        for (const [target, code] of refused) {
          const id = `refused-name-${ids.length}-${forwarder}`;
          ids.push(id);
          const reply = await curl(`${stack.url}${target}`, ['--path-as-is', '-H', `X-Request-Id: ${id}`]);
          expect(reply.status, target).to.equal(404);
          expect(reply.body.toString(), target).to.contain('<title>404 Not Found</title>');
          const line = await eventually(
            () => readLog(sandbox, 'error.log').find((l) => l.endsWith(`request_id: ${id}`)),
            3000,
            `the error.log line of ${target}`,
          );
          expect(line, target).to.contain(
            code === 'AH00026'
              ? `AH00026: found %2f (encoded '/') in URI path (${target}), returning 404`
              : 'AH00128: File does not exist:',
          );
          expect(line, target).not.to.match(/Invalid controller name|End of script output/);
        }
        // A marker the host does log: once its line is there, the host had said all it would of the refused ones.
        const marker = await get(stack.url, '/External/NoSuchController');
        const markerId = marker.headers['x-request-id'] as string;
        await eventually(
          () => readLog(sandbox, 'host.log').find((l) => l.includes(`[req ${markerId}]`)),
          3000,
          "the marker's host.log line",
        );
        const hostLog = readLog(sandbox, 'host.log').join('\n');
        for (const id of ids) expect(hostLog).not.to.contain(`[req ${id}]`);
        const access = readLog(sandbox, 'access.log').join('\n');
        for (const [target] of refused) expect(access).to.contain(`"GET ${target} HTTP/1.1" 404 `);
      });
    });

    it("gives a controller the query's bytes as PHP's $_GET holds them (queryBytes), beside the decoded query", async function () {
      requirePhpCgi();
      writeFileSync(
        join(sandbox.controllers, 'QueryBytes.ts'),
        `export default ({ query, queryBytes }: any) => ({ decoded: query.y, bytes: Buffer.from(queryBytes.y, 'latin1').toString('hex'), names: Object.keys(queryBytes).map((n) => Buffer.from(n, 'latin1').toString('hex')) });\n`,
      );
      const queryString = 'y=%E9%C3%A9&n%FF=1';
      const reply = await curl(`${stack.url}/External/QueryBytes?${queryString}`);
      expect(reply.status).to.equal(200);
      // The legacy's PHP, given the same query string: the bytes of $_GET['y'] and of each name.
      const php = join(sandbox.dir, 'queryBytes.php');
      writeFileSync(php, `<?php echo json_encode(['bytes' => bin2hex($_GET['y']), 'names' => array_map('bin2hex', array_keys($_GET))]);\n`);
      const phpOut = execFileSync('php-cgi', [php], {
        env: { PATH: process.env.PATH, REDIRECT_STATUS: '200', REQUEST_METHOD: 'GET', SCRIPT_FILENAME: php, QUERY_STRING: queryString },
      }).toString();
      const legacy = JSON.parse(phpOut.slice(phpOut.indexOf('\r\n\r\n') + 4)) as { bytes: string; names: string[] };
      expect(legacy).to.deep.equal({ bytes: 'e9c3a9', names: ['79', '6eff'] });
      expect(JSON.parse(reply.body.toString())).to.deep.equal({ decoded: '\ufffdé', ...legacy });
    });

    it('replaces client-sent X-Forwarded-* with its own', async function () {
      const reply = await get(stack.url, '/External/Headers', {
        headers: {
          'X-Forwarded-For': '6.6.6.6',
          'X-Forwarded-Host': 'evil.example',
          'X-Forwarded-Proto': 'https',
          Host: 'service.example',
        },
      });
      const { headers } = JSON.parse(reply.body);
      expect(headers['x-forwarded-for']).to.equal('127.0.0.1');
      expect(headers['x-forwarded-proto']).to.equal('http');
      expect(headers['x-forwarded-host']).to.equal('service.example');
    });

    it('does not forward hop-by-hop headers, nor those the Connection header names', async function () {
      const reply = await get(stack.url, '/External/Headers', {
        headers: { Connection: 'keep-alive, X-Secret-Hop', 'X-Secret-Hop': '1', 'Keep-Alive': 'timeout=1', TE: 'trailers' },
      });
      const { headers } = JSON.parse(reply.body);
      expect(headers).not.to.have.property('x-secret-hop');
      expect(headers).not.to.have.property('keep-alive');
      expect(headers).not.to.have.property('te');
    });

    it("does not pass the host's keep-alive terms to the client", async function () {
      const reply = await get(stack.url, '/External/Headers', { headers: { Connection: 'keep-alive' } });
      // The host advertises its own, longer timeout (keep-alive: timeout=75); it must not reach the client.
      expect(reply.headers['keep-alive']).to.be.oneOf([undefined, 'timeout=5']); // the proxy's own, or none
      expect(reply.headers.connection).to.equal('keep-alive');
    });

    it('gives the host and the client the same request id, keeping a well-formed incoming one', async function () {
      const generated = await get(stack.url, '/External/Headers');
      expect(JSON.parse(generated.body).requestId).to.equal(generated.headers['x-request-id']);
      const kept = await get(stack.url, '/External/Headers', { headers: { 'X-Request-Id': 'lb-1234.abc' } });
      expect(kept.headers['x-request-id']).to.equal('lb-1234.abc');
      expect(JSON.parse(kept.body).requestId).to.equal('lb-1234.abc');
      const replaced = await get(stack.url, '/External/Headers', { headers: { 'X-Request-Id': 'bad id with spaces' } });
      expect(replaced.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
    });

    it('serves /External/../favicon.ico as the favicon, not as a controller', async function () {
      const response = await rawExchange(stack.url, 'GET /External/../favicon.ico HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect(response).to.match(/^HTTP\/1\.1 404 Not Found\r\n/);
    });

    it('never answers a pipelined request with the 400 meant for a malformed one after it', async function () {
      writeFileSync(
        join(sandbox.controllers, 'Slowish.ts'),
        `export default () => new Promise((r) => setTimeout(() => r('slowish'), 300));\n`,
      );
      const response = await rawExchange(
        stack.url,
        'GET /External/Slowish HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nBad Header\r\n\r\n',
      );
      expect(response).not.to.match(/^HTTP\/1\.1 400/);
    });

    it('answers every pipelined request in order, failures included, and leaves none in flight', async function () {
      // Node gives a queued pipelined response no socket until the one before it ends: a failure must
      // still be answered then (it once returned early and left the client and a stop waiting for ever).
      // A slow one first, so the failures behind it are certainly queued.
      writeFileSync(
        join(sandbox.controllers, 'Dawdle.ts'),
        `export default () => new Promise((resolve) => setTimeout(() => resolve('dawdled'), 300));\n`,
      );
      const paths = ['/External/Dawdle', '/External/Missing', '/External/Headers', '/External/Missing', '/External/Missing'];
      const raw = paths
        .map((path, i) => `GET ${path} HTTP/1.1\r\nHost: x\r\n${i === paths.length - 1 ? 'Connection: close\r\n' : ''}\r\n`)
        .join('');
      const response = await rawExchange(stack.url, raw);
      const statuses = [...response.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
      expect(statuses).to.deep.equal([200, 500, 200, 500, 500]);
      const status = await get(stack.url, '/server-status?auto');
      expect(status.body).to.match(/^BusyWorkers: 1$/m); // this request only
    });

    it('answers a malformed request with 400 and stays up', async function () {
      const response = await rawExchange(stack.url, 'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
      expect(response).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect((await get(stack.url, '/External/Headers')).status).to.equal(200);
    });
  });

  describe(`when the client goes away before the answer (${forwarder})`, function () {
    let sandbox: Sandbox;
    let stack: Running;

    before(async function () {
      sandbox = makeSandbox();
      stack = await startStack(sandbox, ['--workers', '1', '--forwarder', forwarder]);
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    it("aborts the host's request, so the controller's signal fires", async function () {
      const marker = join(sandbox.dir, 'aborted.txt');
      const called = callMarker(sandbox, 'Patient');
      writeFileSync(
        join(sandbox.controllers, 'Patient.ts'),
        `import { writeFileSync } from 'node:fs';
  export default ({ signal }: any) => new Promise((resolve) => {
    ${called.statement}
    const timer = setTimeout(() => resolve('too late'), 10_000);
    signal.addEventListener('abort', () => { clearTimeout(timer); writeFileSync(${JSON.stringify(marker)}, 'aborted'); resolve('gone'); });
  });\n`,
      );
      const { hostname, port } = new URL(stack.url);
      const socket = connect(Number(port), hostname, () => socket.write('GET /External/Patient HTTP/1.1\r\nHost: x\r\n\r\n'));
      await called.reached();
      socket.destroy();
      expect(await eventually(() => writtenText(marker), 3000, 'the abort')).to.equal('aborted');
    });

    it('closes the pipelined requests queued behind it: logged, and none left in flight', async function () {
      const called = callMarker(sandbox, 'Queued');
      writeFileSync(
        join(sandbox.controllers, 'Queued.ts'),
        `export default () => { ${called.statement} return new Promise((resolve) => setTimeout(() => resolve('late'), 2000)); };\n`,
      );
      const { hostname, port } = new URL(stack.url);
      const socket = connect(Number(port), hostname, () => socket.write('GET /External/Queued HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(5)));
      await called.reached();
      socket.destroy();
      const lines = await eventually(
        () => {
          const queued = readLog(sandbox, 'access.log').filter((l) => l.includes('/External/Queued'));
          return queued.length === 5 ? queued : undefined;
        },
        1500,
        'an access-log line for each of the 5 requests before the controller answers',
      );
      expect(lines).to.have.length(5);
      expect((await get(stack.url, '/server-status?auto')).body).to.match(/^BusyWorkers: 1$/m);
    });
    it('closes a queued response the host broke off mid-body, once the client leaves', async function () {
      const lagging = callMarker(sandbox, 'Lagging');
      writeFileSync(
        join(sandbox.controllers, 'Lagging.ts'),
        `export default () => { ${lagging.statement} return new Promise((resolve) => setTimeout(() => resolve('late'), 2000)); };\n`,
      );
      writeFileSync(
        join(sandbox.controllers, 'Broken.ts'),
        // A declared length: a body failing under it cuts the host's connection (without one it ends with a trailer, design §5).
        // Past the host's output buffer (--output-buffering, 4096): within it, the failure would be a 500 with the partial body.
        `export default () => new Response(new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode('partial'.padEnd(5000, '.'))); setTimeout(() => c.error(new Error('boom')), 50); } }), { headers: { 'Content-Length': '10000' } });\n`,
      );
      const { hostname, port } = new URL(stack.url);
      const socket = connect(Number(port), hostname, () =>
        socket.write('GET /External/Lagging HTTP/1.1\r\nHost: x\r\n\r\nGET /External/Broken HTTP/1.1\r\nHost: x\r\n\r\n'),
      );
      await lagging.reached();
      // The proxy cut Broken's response, still queued behind Lagging's, and said so.
      await eventually(
        () =>
          readLog(sandbox, 'error.log').find(
            (l) => l.includes('error reading response from upstream') && l.includes('for /External/Broken'),
          ),
        3000,
        'the mid-body line',
      );
      socket.destroy();
      await eventually(
        () => (readLog(sandbox, 'access.log').some((l) => l.includes('"GET /External/Broken HTTP/1.1"')) ? true : undefined),
        1500,
        "Broken's access-log line before Lagging's controller answers",
      );
      expect((await get(stack.url, '/server-status?auto')).body).to.match(/^BusyWorkers: 1$/m);
    });
  });

  describe(`forwarding failures (${forwarder})`, function () {
    let sandbox: Sandbox;
    let stack: Running;

    before(async function () {
      sandbox = makeSandbox();
      stack = await startStack(sandbox, ['--workers', '1', '--forwarder', forwarder, '--max-execution-time', '1']);
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    const errorLine = (id: string) =>
      eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes(id)), 3000, 'the error.log line');

    it('answers 500 with "End of script output before headers" when the host ends a request without headers', async function () {
      const reply = await get(stack.url, '/External/Latest?sn=1&no=');
      expect(reply.status).to.equal(500);
      expect(reply.body).to.contain('<title>500 Internal Server Error</title>');
      const id = reply.headers['x-request-id'] as string;
      const line = await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.includes(id) && l.includes('[core:error]')),
        3000,
        'the End of script line',
      );
      // Apache's line, without the errno text of a socket failure that did not happen.
      expect(line).not.to.contain('ECONNRESET');
      expect(line).to.contain('End of script output before headers: /External/Latest');
    });

    it('answers 504 naming the controller and the limit when no headers come in time', async function () {
      writeFileSync(join(sandbox.controllers, 'Never.ts'), `export default () => new Promise(() => {});\n`);
      const reply = await get(stack.url, '/External/Never');
      expect(reply.status).to.equal(504);
      const line = await errorLine(reply.headers['x-request-id'] as string);
      expect(line).to.contain('Timeout waiting for output from controller Never (/External/Never)');
      expect(line).to.contain('max_execution_time 1 s');
    });

    it('names the controller, not its path info, in the 504 line for /External/<Name>/more', async function () {
      writeFileSync(join(sandbox.controllers, 'Never.ts'), `export default () => new Promise(() => {});\n`);
      const reply = await get(stack.url, '/External/Never/x/y');
      expect(reply.status).to.equal(504);
      const line = await errorLine(reply.headers['x-request-id'] as string);
      expect(line).to.contain('Timeout waiting for output from controller Never (/External/Never/x/y)');
    });

    it('cuts the client, never leaves it hanging, when the host dies in the middle of a body', async function () {
      // The endless controllers above hold the one worker until its replacement listens (a worker runs one request).
      const idleWorkers = async () =>
        (JSON.parse((await get(stack.url, '/server-status?json')).body) as { hosts: { summary?: { idleProcesses?: number } }[] }).hosts[0]
          .summary?.idleProcesses;
      await eventually(async () => ((await idleWorkers()) ? true : undefined), 10_000, 'an idle host worker');
      writeFileSync(
        join(sandbox.controllers, 'DiesMidBody.ts'),
        // Past the host's output buffer: within it, nothing has gone out and the client gets Apache's 500.
        `export default () => new Response(new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode('partial'.padEnd(5000, '.'))); setTimeout(() => process.kill(process.pid, 'SIGKILL'), 100); } }));\n`,
      );
      const outcome = await get(stack.url, '/External/DiesMidBody').then(
        (reply) => `complete ${reply.status} ${reply.body}`,
        (err: NodeJS.ErrnoException) => `cut ${err.code ?? err.message}`,
      );
      expect(outcome).to.match(/^cut /);
      // The pool replaces the worker; requests are answered again.
      writeFileSync(join(sandbox.controllers, 'Alive.ts'), `export default () => 'alive';\n`);
      await eventually(
        async () => ((await get(stack.url, '/External/Alive')).body === 'alive' ? true : undefined),
        10_000,
        'service again',
      );
    });

    it('passes a large streamed body intact to a client that reads slowly (a pause must be resumed)', async function () {
      // 8 MB in 64 KB chunks: more than the socket buffers hold, so the engine pauses the host and must resume it.
      writeFileSync(
        join(sandbox.controllers, 'Big.ts'),
        `export default () => { let i = 0; return new Response(new ReadableStream({ pull(c) { if (i === 128) return c.close(); c.enqueue(new Uint8Array(65536).fill(i++ % 251)); } })); };\n`,
      );
      const { request } = await import('node:http');
      const { createHash } = await import('node:crypto');
      const { hostname, port } = new URL(stack.url);
      const got = await new Promise<{ length: number; digest: string }>((resolve, reject) => {
        request({ host: hostname, port, path: '/External/Big', agent: false }, (res) => {
          const hash = createHash('sha256');
          let length = 0;
          res.pause();
          setTimeout(() => res.resume(), 300); // the client lags behind the host
          res.on('data', (chunk: Buffer) => {
            length += chunk.length;
            hash.update(chunk);
          });
          res.on('end', () => resolve({ length, digest: hash.digest('hex') }));
          res.on('error', reject);
        })
          .on('error', reject)
          .end();
      });
      const expected = createHash('sha256');
      for (let i = 0; i < 128; i++) expected.update(Buffer.alloc(65536, i % 251));
      expect(got).to.deep.equal({ length: 128 * 65536, digest: expected.digest('hex') });
    });

    it('forwards a request body and answers it', async function () {
      writeFileSync(
        join(sandbox.controllers, 'Method.ts'),
        `export default ({ method, headers }: any) => ({ method, length: headers['content-length'] ?? null });\n`,
      );
      const { request } = await import('node:http');
      const { hostname, port } = new URL(stack.url);
      const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(
          { host: hostname, port, path: '/External/Method', method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
          (res) => {
            let body = '';
            res.on('data', (c) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.write('{"a":');
        req.end('1}'); // chunked: no Content-Length from the client
      });
      expect(reply.status).to.equal(200);
      expect(JSON.parse(reply.body).method).to.equal('POST');
    });
  });

  describe(`a body that breaks off after 100 Continue, to a host of our own (${forwarder})`, function () {
    let sandbox: Sandbox;
    let proxy: Running;
    let host: Server;
    /** The host's side of each request, by its target: its first body bytes came, it closed before the body's end. */
    const seen = new Map<string, { data: Promise<void>; cut: boolean }>();

    before(async function () {
      sandbox = makeSandbox();
      const path = join(sandbox.dir, 'host.sock');
      host = createServer((req) => {
        const side = { data: new Promise<void>((resolve) => req.once('data', () => resolve())), cut: false };
        seen.set(req.url ?? '', side);
        req.once('close', () => (side.cut = !req.complete));
      });
      await new Promise<void>((resolve) => host.listen(path, resolve));
      proxy = await startProxy(sandbox, ['--upstream', `unix:${path}`, '--forwarder', forwarder]);
    });

    after(async function () {
      await proxy?.stop();
      host?.closeAllConnections();
      host?.close();
      sandbox?.remove();
    });

    /** Sends a chunked head with Expect, then a first chunk once 100 Continue came; resolves when the host has it. */
    async function startBody(query: string) {
      const { hostname, port } = new URL(proxy.url);
      const socket = connect(Number(port), hostname);
      let received = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (received += chunk));
      socket.on('error', () => {});
      socket.write(`POST /External/Cut?${query} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n`);
      await eventually(() => (received.startsWith('HTTP/1.1 100 ') ? true : undefined), 3000, 'the 100 Continue');
      socket.write('5\r\nhello\r\n');
      const host = await eventually(() => seen.get(`/External/Cut?${query}`), 3000, "the host's request");
      await host.data;
      return { socket, received: () => received, hostCut: () => (host.cut ? true : undefined) };
    }

    it("answers a malformed chunk 400 and ends the host's request", async function () {
      const sent = await startBody('bad=1');
      sent.socket.write('5\nhello\r\n0\r\n\r\n');
      await eventually(() => (/HTTP\/1\.1 400 /.test(sent.received()) ? true : undefined), 3000, 'the 400 page');
      await eventually(sent.hostCut, 3000, "the host's request cut");
      sent.socket.destroy();
    });

    it("logs a client that leaves mid-body F5 and ends the host's request", async function () {
      const sent = await startBody('left=1');
      sent.socket.destroy();
      await eventually(sent.hostCut, 3000, "the host's request cut");
      const line = await eventually(
        () => readLog(sandbox, 'access.log').find((l) => l.includes('"POST /External/Cut?left=1 HTTP/1.1"')),
        3000,
        'the access line',
      );
      expect(line).to.match(/" 400 - /);
      const errors = readLog(sandbox, 'error.log');
      expect(errors.filter((l) => l.includes('Request body incomplete: the connection closed before it ended'))).to.have.length(1);
      expect(errors.filter((l) => l.includes('HPE_INVALID_EOF_STATE'))).to.deep.equal([]);
    });
  });

  describe(`a host that cannot be reached (${forwarder})`, function () {
    let sandbox: Sandbox;
    let proxy: Running;
    const socket = () => join(sandbox.dir, 'nobody-listens.sock');

    before(async function () {
      sandbox = makeSandbox();
      proxy = await startProxy(sandbox, ['--upstream', `unix:${socket()}`, '--forwarder', forwarder]);
    });

    after(async function () {
      await proxy?.stop();
      sandbox?.remove();
    });

    it('answers 503 and logs a connect failure naming the upstream', async function () {
      const reply = await get(proxy.url, '/External/Latest?sn=1&no=');
      expect(reply.status).to.equal(503);
      expect(reply.body).to.contain('<title>503 Service Unavailable</title>');
      const id = reply.headers['x-request-id'] as string;
      const line = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes(id)), 3000, 'error.log line');
      expect(line).to.contain('[proxy:error]');
      expect(line).to.contain(`attempt to connect to upstream unix:${socket()} failed`);
      expect(line).to.contain('[client 127.0.0.1:');
    });
  });
}
