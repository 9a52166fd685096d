// Lingering close (docs/design.md §3.1): an answer given before the request body was read reaches a client
// that writes its whole body before it reads (a raw socket, Python's urllib; no `Expect: 100-continue`),
// because the proxy reads and drops the rest of the body before it closes. Before, such a client got
// `Broken pipe` (EPIPE) and no answer while access.log recorded the status. curl, which sends `Expect`, too.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { errorPage } from '../../proxy/core/errorPages.ts';
import { get } from '../helpers/http.ts';
import { makeCertificate } from '../../tools/certificate.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const MB = 1024 * 1024;
/** Past the default --post-max-size (8m), and a body long enough to fill every buffer on the way many times. */
const SIZES = [9, 100] as const;
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A form body of `mb` MiB: `a=xxxx…`. */
function formBody(mb: number): Buffer {
  const body = Buffer.alloc(mb * MB, 'x');
  body.write('a=');
  return body;
}

/**
 * A raw HTTP/1.1 client that writes the head and the whole body, and reads only once the last byte was
 * written (it does not even look at the socket before). A write that fails (EPIPE, ECONNRESET) fails it.
 */
async function sendAllThenRead(url: string, path: string, body: Buffer, headers: Record<string, string>): Promise<Answer> {
  const { hostname, port } = new URL(url);
  const socket: Socket = connect(Number(port), hostname);
  socket.pause();
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  const closed = once(socket, 'close');
  const head = Object.entries({ Host: 'localhost', ...FORM, 'Content-Length': String(body.length), ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n`);
  await new Promise<void>((resolve, reject) => socket.write(body, (err) => (err ? reject(err) : resolve())));
  socket.resume();
  await closed;
  return parseAnswer(Buffer.concat(received).toString('latin1'));
}

function parseAnswer(raw: string): Answer {
  const end = raw.indexOf('\r\n\r\n');
  expect(end, `a whole answer, got ${JSON.stringify(raw.slice(0, 200))}`).to.be.greaterThan(0);
  const [statusLine, ...fields] = raw.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const field of fields) headers[field.slice(0, field.indexOf(':')).toLowerCase()] = field.slice(field.indexOf(':') + 1).trim();
  return { status: Number(statusLine.split(' ')[1]), headers, body: raw.slice(end + 4) };
}

const run = promisify(execFile);

/** Python's urllib, which sends `Connection: close` and writes the whole body before it reads. */
const URLLIB = `
import sys, urllib.request, urllib.error
url, size = sys.argv[1], int(sys.argv[2])
data = b'a=' + b'x' * (size - 2)
request = urllib.request.Request(url, data=data, headers={'Content-Type': 'application/x-www-form-urlencoded'})
try:
    answer = urllib.request.urlopen(request, timeout=60)
except urllib.error.HTTPError as error:
    answer = error
sys.stdout.write('%d\\n' % answer.status)
sys.stdout.write(answer.read().decode('latin-1'))
`;

async function urllib(url: string, mb: number): Promise<Answer> {
  const { stdout } = await run('python3', ['-c', URLLIB, url, String(mb * MB)], { maxBuffer: MB });
  const newline = stdout.indexOf('\n');
  return { status: Number(stdout.slice(0, newline)), headers: {}, body: stdout.slice(newline + 1) };
}

/** curl as it comes: `Expect: 100-continue` for a body this size, the body from a file. */
async function curlPost(url: string, file: string): Promise<Answer> {
  const { stdout } = await run(
    'curl',
    ['-sS', '-H', 'Content-Type: application/x-www-form-urlencoded', '--data-binary', `@${file}`, '-w', '\n%{http_code}', url],
    {
      maxBuffer: MB,
    },
  );
  const newline = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(newline + 1)), headers: {}, body: stdout.slice(0, newline) };
}

/** The access line of the request tagged `tag` (in its query), once it is written. */
function accessLine(sandbox: Sandbox, tag: string): Promise<string> {
  return eventually(
    () => readLog(sandbox, 'access.log').find((line) => line.includes(`c=${tag} HTTP/`)),
    5000,
    `the access line of ${tag}`,
  );
}

const page = (status: number) => errorPage(status).toString('latin1');

describe('an answer given before the request body was read', function () {
  this.timeout(30_000);
  let sandbox: Sandbox;
  let stack: Running;
  let limited: Running;
  const files = new Map<number, string>();

  before(async function () {
    sandbox = makeSandbox();
    // The host answers at once without reading the body of a form past --post-max-size (PHP drops it).
    writeFileSync(join(sandbox.controllers, 'Form.ts'), `export default ({ post }: any) => ({ fields: Object.keys(post).length });\n`);
    for (const mb of SIZES) {
      files.set(mb, join(sandbox.dir, `form-${mb}`));
      writeFileSync(files.get(mb)!, formBody(mb));
    }
    const cert = makeCertificate(sandbox.dir);
    const common = ['--workers', '1', '--proxy-workers', '1'];
    stack = await startStack(sandbox, [...common, '--tls-port', '0', '--tls-cert', cert.cert, '--tls-key', cert.key]);
    limited = await startStack(sandbox, [...common, '--limit-request-body', '1m']);
  });

  after(async function () {
    await Promise.all([stack?.stop(), limited?.stop()]);
    sandbox?.remove();
  });

  const CONDITIONS = [
    { title: 'a controller given a form past post_max_size', path: '/External/Form', status: 200, body: '{"fields":0}', over: () => stack },
    { title: 'a body past --limit-request-body', path: '/External/Form', status: 413, body: page(413), over: () => limited },
    { title: 'a missing controller', path: '/External/Missing', status: 500, body: page(500), over: () => stack },
    { title: 'a static file, which takes no POST', path: '/favicon.ico', status: 405, body: page(405), over: () => stack },
  ];

  for (const condition of CONDITIONS) {
    describe(`for ${condition.title}`, function () {
      for (const mb of SIZES) {
        it(`reaches a raw client that sends all ${mb} MB first, then the connection closes (${condition.status})`, async function () {
          const tag = `raw-${mb}-${condition.status}`;
          // Keep-alive asked for: no keep-alive after a body that was not read.
          const answer = await sendAllThenRead(condition.over().url, `${condition.path}?c=${tag}`, formBody(mb), {});
          expect([answer.status, answer.body]).to.deep.equal([condition.status, condition.body]);
          expect(answer.headers.connection).to.equal('close');
          expect(await accessLine(sandbox, tag)).to.include(`HTTP/1.1" ${condition.status} `);
        });

        it(`reaches Python's urllib sending ${mb} MB (${condition.status})`, async function () {
          const tag = `urllib-${mb}-${condition.status}`;
          const answer = await urllib(`${condition.over().url}${condition.path}?c=${tag}`, mb);
          expect([answer.status, answer.body]).to.deep.equal([condition.status, condition.body]);
          expect(await accessLine(sandbox, tag)).to.include(`HTTP/1.1" ${condition.status} `);
        });

        it(`reaches curl sending ${mb} MB with Expect: 100-continue (${condition.status})`, async function () {
          const tag = `curl-${mb}-${condition.status}`;
          const answer = await curlPost(`${condition.over().url}${condition.path}?c=${tag}`, files.get(mb)!);
          expect([answer.status, answer.body]).to.deep.equal([condition.status, condition.body]);
          expect(await accessLine(sandbox, tag)).to.include(`HTTP/1.1" ${condition.status} `);
        });
      }
    });
  }

  it('keeps the connection alive after an answer given once the whole body was read', async function () {
    const answer = await get(stack.url, '/External/Form?c=small', {
      method: 'POST',
      headers: { ...FORM, Connection: 'keep-alive' },
      body: 'a=1&b=2',
    });
    expect([answer.status, answer.body, answer.headers.connection]).to.deep.equal([200, '{"fields":2}', 'keep-alive']);
  });

  it('stops reading a body that stalls after its answer once it has been idle 5 s, the answer delivered', async function () {
    const { hostname, port } = new URL(stack.url);
    const connectionsOpen = async () => {
      const status = await get(stack.url, '/server-status?auto');
      return Number(/^ConnsTotal: (\d+)$/m.exec(status.body)![1]) - 1; // not counting this one
    };
    const before = await connectionsOpen();
    // Half-open allowed: the client stays, silent, after the proxy's FIN, as a stalled client would.
    const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    socket.on('error', () => {}); // the proxy's close may reach it as a reset
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    // 20 MB declared, 10 MB sent, then nothing: the answer (405) comes before the body, which never ends.
    // `Connection: close`, as urllib sends it: before, the proxy closed at once, the body unread.
    socket.write(`POST /favicon.ico?c=stalled HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: ${20 * MB}\r\n\r\n`);
    await new Promise<void>((resolve, reject) => socket.write(formBody(10), (err) => (err ? reject(err) : resolve())));
    const lastByte = Date.now();
    await eventually(async () => ((await connectionsOpen()) <= before ? true : undefined), 15_000, 'the stalled connection to close');
    const lingered = Date.now() - lastByte;
    socket.destroy();
    expect(parseAnswer(Buffer.concat(received).toString('latin1')).status).to.equal(405);
    expect(lingered).to.be.within(4000, 8000);
  });

  describe('over HTTP/2', function () {
    let session: ClientHttp2Session;
    before(async function () {
      session = h2connect(stack.tlsUrl!, { rejectUnauthorized: false });
      await once(session, 'connect');
    });
    after(function () {
      session?.close();
    });

    for (const { path, status, body } of [
      { path: '/favicon.ico', status: 405, body: page(405) },
      { path: '/External/Missing', status: 500, body: page(500) },
    ]) {
      it(`answers a stream that sends all 100 MB first (${status}), and the session serves the next stream`, async function () {
        const tag = `h2-${status}`;
        const stream = session.request({ ':method': 'POST', ':path': `${path}?c=${tag}`, ...FORM });
        const response = once(stream, 'response') as Promise<[Record<string, string | number>]>;
        // HTTP/2 is flow controlled: a client can write no more than the window before the server reads,
        // so the answer is read as it comes while 100 MB are offered, 1 MB at a time; a stream the proxy
        // ends early (RST_STREAM NO_ERROR) stops the writing, without an error.
        const chunks: Buffer[] = [];
        stream.on('data', (piece: Buffer) => chunks.push(piece));
        const closed = once(stream, 'close');
        const chunk = formBody(1);
        for (let sent = 0; sent < 100 && !stream.closed; sent++) {
          if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), closed]);
        }
        if (!stream.closed) stream.end();
        const [headers] = await response;
        await closed;
        expect(stream.rstCode).to.equal(0); // NO_ERROR
        expect([Number(headers[':status']), Buffer.concat(chunks).toString('latin1')]).to.deep.equal([status, body]);
        expect(await accessLine(sandbox, tag)).to.include(`HTTP/2.0" ${status} `);
        const next = session.request({ ':path': '/favicon.ico' });
        const [nextHeaders] = (await once(next, 'response')) as [Record<string, string | number>];
        next.resume();
        expect(nextHeaders[':status']).to.equal(404);
      });
    }
  });
});
