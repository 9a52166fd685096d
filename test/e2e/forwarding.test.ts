// What crosses the proxy on the way to the host and back: the pitfalls of http-proxy 1.18.1 handled.
import { connect } from 'node:net';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** Sends `raw` bytes (ending in `Connection: close`) and resolves with all the server sent until it closed. */
function rawExchange(url: string, raw: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(raw));
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => (received += chunk));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
  });
}

describe('forwarding to the host', function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Headers.ts'), `export default ({ headers, requestId }: any) => ({ headers, requestId });\n`);
    stack = await startStack(sandbox);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('survives a Trailer header on a GET (node-http-proxy #1647) and keeps serving', async function () {
    const response = await rawExchange(stack.url, 'GET /External/Headers HTTP/1.1\r\nHost: x\r\nTrailer: cookie\r\nConnection: close\r\n\r\n');
    expect(response).to.match(/^HTTP\/1\.1 200 OK\r\n/);
    expect(response).not.to.match(/"trailer"/);
    expect((await get(stack.url, '/External/Headers')).status).to.equal(200);
  });

  it('replaces client-sent X-Forwarded-* with its own', async function () {
    const reply = await get(stack.url, '/External/Headers', {
      headers: { 'X-Forwarded-For': '6.6.6.6', 'X-Forwarded-Host': 'evil.example', 'X-Forwarded-Proto': 'https', Host: 'service.example' },
    });
    const { headers } = JSON.parse(reply.body);
    expect(headers['x-forwarded-for']).to.equal('127.0.0.1');
    expect(headers['x-forwarded-proto']).to.equal('http');
    expect(headers['x-forwarded-host']).to.equal('service.example');
  });

  it('does not forward hop-by-hop headers, nor those the Connection header names', async function () {
    const reply = await get(stack.url, '/External/Headers', { headers: { Connection: 'keep-alive, X-Secret-Hop', 'X-Secret-Hop': '1', 'Keep-Alive': 'timeout=1', TE: 'trailers' } });
    const { headers } = JSON.parse(reply.body);
    expect(headers).not.to.have.property('x-secret-hop');
    expect(headers).not.to.have.property('keep-alive');
    expect(headers).not.to.have.property('te');
  });

  it("does not pass the host's keep-alive terms to the client", async function () {
    const reply = await get(stack.url, '/External/Headers', { headers: { Connection: 'keep-alive' } });
    // The host advertises its own, longer timeout (keep-alive: timeout=75); it must not reach the client.
    expect(reply.headers['keep-alive']).to.equal(undefined);
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
    writeFileSync(join(sandbox.controllers, 'Slowish.ts'), `export default () => new Promise((r) => setTimeout(() => r('slowish'), 300));\n`);
    const response = await rawExchange(stack.url, 'GET /External/Slowish HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nBad Header\r\n\r\n');
    expect(response).not.to.match(/^HTTP\/1\.1 400/);
  });

  it('answers a malformed request with 400 and stays up', async function () {
    const response = await rawExchange(stack.url, 'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
    expect(response).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect((await get(stack.url, '/External/Headers')).status).to.equal(200);
  });
});

describe('when the client goes away before the answer', function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    stack = await startStack(sandbox);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it("aborts the host's request, so the controller's signal fires", async function () {
    const marker = join(sandbox.dir, 'aborted.txt');
    writeFileSync(
      join(sandbox.controllers, 'Patient.ts'),
      `import { writeFileSync } from 'node:fs';
export default ({ signal }: any) => new Promise((resolve) => {
  const timer = setTimeout(() => resolve('too late'), 10_000);
  signal.addEventListener('abort', () => { clearTimeout(timer); writeFileSync(${JSON.stringify(marker)}, 'aborted'); resolve('gone'); });
});\n`,
    );
    const { hostname, port } = new URL(stack.url);
    const socket = connect(Number(port), hostname, () => socket.write('GET /External/Patient HTTP/1.1\r\nHost: x\r\n\r\n'));
    await eventually(() => (readLog(sandbox, 'host.log').some((l) => l.includes('Loaded controller Patient')) ? true : undefined), 3000, 'the request to reach the controller');
    socket.destroy();
    expect(await eventually(() => (existsSync(marker) ? readFileSync(marker, 'utf8') : undefined), 3000, 'the abort')).to.equal('aborted');
  });
});
