// HTTP/2 attacks against the HTTPS listener, frame by frame over raw TLS: rapid reset (CVE-2023-44487),
// CONTINUATION flood (CVE-2024-27316), header lists past the limits, and stream identifiers a client may
// not use. Each must end in a refused stream or a closed connection, the proxy must stay the same process
// and keep serving, and its resident memory must come back near where it was.
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect as h2connect, type ClientHttp2Stream } from 'node:http2';
import { join } from 'node:path';
import { expect } from 'chai';
import { curl } from '../helpers/clients.ts';
import { attack, CANCEL, END_HEADERS, END_STREAM, frame, FRAME, padField, requestBlock } from '../helpers/http2Frames.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';
import { makeCertificate } from '../../tools/certificate.ts';

/** What the attacks may leave in the proxy once they are over (the load suite's slack). */
const RSS_SLACK_MB = 50;

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
}

describe('hostile HTTP/2', function () {
  this.timeout(120_000);
  let sandbox: Sandbox;
  let stack: Running;
  let port: number;
  let proxyPid: number;
  let idleRss: number;

  before(async function () {
    sandbox = makeSandbox();
    const pair = makeCertificate(sandbox.dir);
    writeFileSync(join(sandbox.publicDir, 'hello.txt'), 'hello\n');
    writeFileSync(join(sandbox.controllers, 'Echo.ts'), `export default async ({ body }) => 'got ' + (await body.text());\n`);
    // One proxy process, so its memory is the memory that serves.
    stack = await startStack(sandbox, ['--proxy-workers', '1', '--tls-port', '0', '--tls-cert', pair.cert, '--tls-key', pair.key]);
    port = Number(new URL(stack.tlsUrl!).port);
    proxyPid = await eventually(() => {
      const line = readLog(sandbox, 'error.log').find((l) => /extqs proxy \d+ configured/.test(l));
      return line ? Number(/extqs proxy (\d+) configured/.exec(line)![1]) : undefined;
    });
    // Warm up: the modules and buffers of an ordinary h2 request are idle memory, not the attack's.
    for (let i = 0; i < 20; i++) expect((await curl(`${stack.tlsUrl}/hello.txt`, ['--http2'])).status).to.equal(200);
    idleRss = rssMb(proxyPid);
  });

  afterEach(async function () {
    const reply = await curl(`${stack.tlsUrl}/hello.txt`, ['--http2']);
    expect([reply.status, reply.httpVersion], 'the proxy serves after the attack').to.deep.equal([200, '2']);
    expect(
      readLog(sandbox, 'error.log').filter((l) => /extqs proxy \d+ configured/.test(l)),
      'no restart',
    ).to.have.length(1);
    expect(rssMb(proxyPid), 'resident memory after the attack').to.be.below(idleRss + RSS_SLACK_MB);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('rapid reset (CVE-2023-44487): of 20,000 streams opened and cancelled at once, few are served before GOAWAY', async function () {
    const pairs: Buffer[] = [];
    for (let i = 0; i < 20_000; i++) {
      const id = 2 * i + 1;
      pairs.push(
        frame(FRAME.HEADERS, END_HEADERS | END_STREAM, id, requestBlock('/hello.txt')),
        frame(FRAME.RST_STREAM, 0, id, Buffer.from([0, 0, 0, CANCEL])),
      );
    }
    const outcome = await attack(port, [Buffer.concat(pairs)]);
    // The server ends the connection with the flood unread, so the kernel may reset it before the GOAWAY is read.
    expect(outcome.closed || outcome.goaway !== undefined, 'GOAWAY or the connection closed').to.equal(true);
    // Far fewer answers than streams: the server stopped doing work for the attacker.
    expect(outcome.types.filter((t) => t === FRAME.HEADERS).length).to.be.below(2_000);
  });

  it('CONTINUATION flood (CVE-2024-27316): endless header fragments are cut off, not buffered', async function () {
    const fragment = padField(0, 'a'.repeat(4000));
    const chunks = [frame(FRAME.HEADERS, 0, 1, requestBlock('/hello.txt'))];
    // 64 MB of CONTINUATION frames, none ending the header block, written as the server reads them.
    for (let i = 0; i < 256; i++) chunks.push(Buffer.concat(Array.from({ length: 64 }, () => frame(FRAME.CONTINUATION, 0, 1, fragment))));
    const outcome = await attack(port, chunks);
    expect(outcome.closed || outcome.goaway !== undefined, 'the connection is closed').to.equal(true);
    expect(outcome.types).to.not.include(FRAME.DATA);
  });

  it('answers a header list past --max-header-size with 431, and resets one far past it', async function () {
    const over = await curl(`${stack.tlsUrl}/hello.txt`, ['--http2', '-H', `X-Big: ${'b'.repeat(20_000)}`]);
    expect(over.status).to.equal(431);
    await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes('HTTP/2 header list of')));
    const fields = Array.from({ length: 40 }, (_, n) => padField(n, 'c'.repeat(4000)));
    const block = Buffer.concat([requestBlock('/hello.txt'), ...fields]);
    const chunks = [frame(FRAME.HEADERS, END_STREAM, 1, block.subarray(0, 16_000))];
    for (let at = 16_000; at < block.length; at += 16_000) {
      const last = at + 16_000 >= block.length;
      chunks.push(frame(FRAME.CONTINUATION, last ? END_HEADERS : 0, 1, block.subarray(at, at + 16_000)));
    }
    const outcome = await attack(port, [Buffer.concat(chunks)], ({ rstCodes }) => rstCodes.length > 0);
    const refused = outcome.closed || outcome.goaway !== undefined || outcome.rstCodes.length > 0;
    expect(refused, 'the stream is refused or the connection ended').to.equal(true);
    expect(outcome.types).to.not.include(FRAME.DATA);
  });

  it('ends a connection (GOAWAY) that uses stream identifiers a client may not use, and serves no reused one', async function () {
    const request = (id: number) => frame(FRAME.HEADERS, END_HEADERS | END_STREAM, id, requestBlock('/hello.txt'));
    const cases: Record<string, Buffer[]> = {
      'an even (server) stream id': [request(2)],
      'HEADERS on stream 0': [request(0)],
      'RST_STREAM on an idle stream': [frame(FRAME.RST_STREAM, 0, 9, Buffer.from([0, 0, 0, CANCEL]))],
    };
    for (const [name, chunks] of Object.entries(cases)) {
      const outcome = await attack(port, chunks);
      expect(outcome.goaway, name).to.be.a('number');
    }
    // A stream id below one used before names a closed stream (RFC 9113 §5.1.1): never served.
    // Stream 3's HEADERS is read right after stream 5's: had it been taken, its answer (a file from memory,
    // as 5's) would come with 5's, and so would a reset of 3.
    const reused = await attack(port, [request(5), request(3)], ({ types }) => types.includes(FRAME.DATA));
    expect(reused.answered).to.deep.equal([5]);
  });

  it('logs a stream whose body is shorter than its content-length as 400, with the client address and port', async function () {
    const session = h2connect(stack.tlsUrl!, { rejectUnauthorized: false });
    session.on('error', () => {});
    await once(session, 'connect');
    const client = `127.0.0.1:${session.socket.localPort}`;
    const stream: ClientHttp2Stream = session.request({ ':method': 'POST', ':path': '/External/Echo?short-body', 'content-length': '10' });
    // nghttp2 resets the stream (PROTOCOL_ERROR): all the answer the client gets.
    const closed = new Promise((resolve) => stream.once('close', resolve));
    stream.on('error', () => {});
    stream.end('hello');
    await closed;
    session.close();
    const access = await eventually(() =>
      readLog(sandbox, 'access.log').find((l) => l.includes('"POST /External/Echo?short-body HTTP/2.0"')),
    );
    // Written after the stream closed, when its proxy socket reads as none.
    const lines = await eventually(() => {
      const found = readLog(sandbox, 'error.log').filter((l) => /\[client [^\]]*\] (Request body incomplete|End of script)/.test(l));
      return found.length > 0 ? found : undefined;
    });
    for (const line of lines) expect(line).to.contain(`[client ${client}]`);
    expect(access, 'the status, never the 200 a response starts with').to.match(/" 400 - /);
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(/\[core:info\] .* Request body incomplete: the stream was reset \(RST_STREAM 1\)/);
  });

  it('refuses streams past --h2-max-concurrent-streams', async function () {
    // 150 requests whose bodies never come: the first 100 stay open, the rest are refused.
    const opened = Array.from({ length: 150 }, (_, i) => frame(FRAME.HEADERS, END_HEADERS, 2 * i + 1, requestBlock('/hello.txt')));
    const outcome = await attack(port, [Buffer.concat(opened)], ({ rstCodes }) => rstCodes.filter((code) => code === 0x7).length >= 50);
    expect(outcome.rstCodes.filter((code) => code === 0x7).length, 'REFUSED_STREAM').to.be.at.least(50);
  });
});
