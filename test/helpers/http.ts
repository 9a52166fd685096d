// A raw-enough HTTP client for tests: node:http, no connection reuse, the path sent exactly as given
// (fetch would normalise `..` and escapes).
import { once } from 'node:events';
import { request } from 'node:http';
import { connect } from 'node:net';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export function get(
  base: string,
  path: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    socketPath?: string;
    body?: string;
    localAddress?: string;
    /** Fails the request when the connection is idle this long: a hang fails fast instead of waiting for a 504. */
    timeoutMs?: number;
  } = {},
): Promise<Reply> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        // An IPv6 URL's hostname keeps its brackets (`[::1]`); node:http wants the bare address.
        host: options.socketPath ? undefined : url.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: options.socketPath ? undefined : url.port,
        socketPath: options.socketPath,
        path,
        method: options.method ?? 'GET',
        headers: options.headers,
        agent: false,
        localAddress: options.localAddress,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.timeoutMs !== undefined) {
      const ms = options.timeoutMs;
      req.setTimeout(ms, () => req.destroy(new Error(`no answer to ${options.method ?? 'GET'} ${path} within ${ms} ms`)));
    }
    req.end(options.body);
  });
}

/** A raw request's whole answer, for one Node's client would refuse to send. */
export async function rawAnswer(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let answer = '';
  socket.setEncoding('latin1').on('data', (chunk: string) => (answer += chunk));
  socket.end(request);
  await once(socket, 'close');
  return answer;
}

/**
 * The whole answer to `request`, written to a unix socket in one write and not half-closed (a client that
 * ends its side is another case); the request says `Connection: close`, so the answer ends with the
 * connection. Fails when the connection is idle `timeoutMs`: a hang fails fast.
 */
export async function rawAnswerOnSocket(socketPath: string, request: Buffer, timeoutMs: number): Promise<string> {
  const socket = connect(socketPath);
  let answer = '';
  socket.setEncoding('latin1').on('data', (chunk: string) => (answer += chunk));
  socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no whole answer within ${timeoutMs} ms, got: ${answer.slice(0, 200)}`)));
  socket.write(request);
  await new Promise((resolve, reject) => socket.once('error', reject).once('close', resolve));
  return answer;
}
