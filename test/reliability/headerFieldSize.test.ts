// One request header field past --limit-request-field-size (default 8190, Apache's LimitRequestFieldSize) is
// answered 400 with Apache's page and AH00561, on HTTP/1.1 and HTTP/2 alike, whatever the client.
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { connect as h2connect } from 'node:http2';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { curl } from '../helpers/clients.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';
import { makeCertificate } from '../../tools/certificate.ts';

/**
 * The answer to `request` (which says or earns `Connection: close`) on a raw connection not half-closed: a
 * client that ends its side first leaves before an answer read from disk.
 */
async function rawAnswer(url: string, request: string): Promise<string> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  let answer = '';
  socket.setEncoding('latin1').on('data', (chunk: string) => (answer += chunk));
  socket.write(request);
  await once(socket, 'close');
  return answer;
}

/** A field line `X-Big: aaa…` of `bytes` bytes in all, as Apache counts it. */
const bigField = (bytes: number) => `X-Big: ${'a'.repeat(bytes - 'X-Big: '.length)}`;

describe('a request header field past --limit-request-field-size (default 8190 bytes)', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    const pair = makeCertificate(sandbox.dir);
    writeFileSync(join(sandbox.publicDir, 'hello.txt'), 'hello\n');
    stack = await startStack(sandbox, ['--tls-port', '0', '--tls-cert', pair.cert, '--tls-key', pair.key]);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  /** The error.log line AH00561 of the request `id`, and the access line that carries `target`. */
  function linesOf(id: string, target: string): Promise<{ error: string; access: string }> {
    return eventually(() => {
      const error = readLog(sandbox, 'error.log').find((l) => l.includes('AH00561') && l.includes(id));
      const access = readLog(sandbox, 'access.log').find((l) => l.includes(target));
      return error && access ? { error, access } : undefined;
    });
  }

  it('answers HTTP/1.1 from a raw socket 400 with the page, closes, and writes the access and error lines as Apache', async function () {
    const answer = await rawAnswer(stack.url, `GET /hello.txt?raw HTTP/1.1\r\nHost: x\r\n${bigField(9_000)}\r\n\r\n`);
    expect(answer).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).to.match(/\r\nConnection: close\r\n/i);
    expect(answer).to.contain('<title>400 Bad Request</title>');
    const id = /\r\nX-Request-Id: (\S+)\r\n/i.exec(answer)![1];
    const { error, access } = await linesOf(id, '"GET /hello.txt?raw HTTP/1.1"');
    expect(error).to.match(
      /\[core:info\] \[pid \d+(:tid \d+)?\] \[client 127\.0\.0\.1:\d+\] AH00561: Request header exceeds LimitRequestFieldSize: X-Big, request_id: /,
    );
    expect(access).to.match(/"GET \/hello\.txt\?raw HTTP\/1\.1" 400 \d+ /);
  });

  it('accepts a field of exactly 8190 bytes', async function () {
    const answer = await rawAnswer(stack.url, `GET /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${bigField(8_190)}\r\n\r\n`);
    expect(answer).to.match(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it('answers curl 400 over HTTP/1.1 and over HTTP/2', async function () {
    const http1 = await curl(`${stack.url}/hello.txt?curl1`, ['-H', bigField(9_000)]);
    expect([http1.status, http1.httpVersion]).to.deep.equal([400, '1.1']);
    const http2 = await curl(`${stack.tlsUrl}/hello.txt?curl2`, ['--http2', '-H', bigField(9_000)]);
    expect([http2.status, http2.httpVersion]).to.deep.equal([400, '2']);
    expect(http2.body.toString()).to.contain('<title>400 Bad Request</title>');
    const one = await linesOf(http1.headers['x-request-id'], '"GET /hello.txt?curl1 HTTP/1.1"');
    expect(one.access).to.match(/" 400 \d+ /);
    const two = await linesOf(http2.headers['x-request-id'], '"GET /hello.txt?curl2 HTTP/2.0"');
    expect(two.access).to.match(/" 400 \d+ /);
    expect(two.error).to.contain('AH00561: Request header exceeds LimitRequestFieldSize: x-big');
  });

  it('answers an HTTP/2 client 400 and serves the same session on', async function () {
    const session = h2connect(stack.tlsUrl!, { rejectUnauthorized: false });
    session.on('error', () => {});
    try {
      const status = async (headers: Record<string, string>) => {
        const stream = session.request({ ':path': '/hello.txt?h2', ...headers });
        stream.resume();
        const [response] = (await once(stream, 'response')) as [Record<string, unknown>];
        await once(stream, 'close');
        return response[':status'];
      };
      expect(await status({ 'x-big': 'a'.repeat(9_000) })).to.equal(400);
      expect(await status({})).to.equal(200);
    } finally {
      session.close();
    }
  });
});
