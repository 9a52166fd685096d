// --spool-max-size bounds the bodies the host keeps on disk until a worker takes them (at --worker-concurrency 1 or
// more), all together: 8 parallel chunked uploads past it (curl and raw sockets) each get 503 with Retry-After and a
// closed connection, the spool directory never holds more than the bound and is empty after, a declared length past
// it is 413 at once, and a neighbour is served meanwhile.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readHostEvents, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const BOUND = 4 * 1024 * 1024;
/** Each upload alone is past the bound. */
const UPLOAD_BYTES = 6 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'u');

/** A chunked POST of UPLOAD_BYTES on a raw socket, written as fast as the server reads; resolves with the answer once the server closed. */
async function rawUpload(port: number): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  socket.setEncoding('latin1').on('data', (text: string) => (answer += text));
  socket.on('error', () => {}); // a reset after the answer is the server closing on an unread body
  const closed = once(socket, 'close');
  await once(socket, 'connect');
  socket.write('POST /External/Upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
  const frame = Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from('\r\n')]);
  for (let sent = 0; sent < UPLOAD_BYTES && !socket.destroyed && answer === ''; sent += CHUNK.length) {
    if (!socket.write(frame)) await Promise.race([once(socket, 'drain'), closed]);
  }
  if (!socket.destroyed && answer === '') socket.write('0\r\n\r\n');
  await closed;
  return answer;
}

/** curl's chunked upload of `file`: the status it got, whatever its exit code (the server closes on the unread rest). */
function curlUpload(url: string, file: string): Promise<string> {
  return new Promise((resolve) => {
    execFile(
      'curl',
      [
        '--silent',
        '--output',
        '/dev/null',
        '--write-out',
        '%{http_code}',
        '-H',
        'Transfer-Encoding: chunked',
        '--data-binary',
        `@${file}`,
        url,
      ],
      (_err, stdout) => resolve(stdout.trim()),
    );
  });
}

describe('the host spool bound (--spool-max-size 4m, --worker-concurrency 1)', function () {
  this.timeout(120_000);
  let sandbox: Sandbox;
  let stack: Running;
  let tmp: string;

  before(async function () {
    sandbox = makeSandbox();
    tmp = join(sandbox.dir, 'tmp');
    mkdirSync(tmp);
    writeFileSync(
      join(sandbox.controllers, 'Upload.ts'),
      'export default async ({ body }) => `got ${(await body.arrayBuffer()).byteLength}`;\n',
    );
    writeFileSync(join(sandbox.controllers, 'Quick.ts'), "export default () => 'quick';\n");
    stack = await startStack(sandbox, ['--workers', '1', '--worker-concurrency', '1', '--proxy-workers', '1', '--spool-max-size', '4m'], {
      TMPDIR: tmp,
    });
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  /** The bytes of the bodies in the host's spool directory now (its extqs-host-* directory under TMPDIR). */
  function spooledBytes(): number {
    let bytes = 0;
    for (const dir of readdirSync(tmp).filter((name) => name.startsWith('extqs-host-'))) {
      for (const name of readdirSync(join(tmp, dir)).filter((n) => n.startsWith('body-'))) {
        bytes += statSync(join(tmp, dir, name), { throwIfNoEntry: false })?.size ?? 0;
      }
    }
    return bytes;
  }

  it('answers 8 parallel chunked uploads past it 503 with Retry-After, holds the bound, leaves nothing, serves a neighbour', async function () {
    const port = Number(new URL(stack.url).port);
    const file = join(sandbox.dir, 'upload.bin');
    writeFileSync(file, Buffer.alloc(UPLOAD_BYTES, 'c'));
    let most = 0;
    let uploading = true;
    const uploads = Promise.all([
      ...Array.from({ length: 4 }, () => curlUpload(`${stack.url}/External/Upload`, file)),
      ...Array.from({ length: 4 }, () => rawUpload(port)),
    ]).finally(() => (uploading = false));
    const neighbours: string[] = [];
    while (uploading) {
      most = Math.max(most, spooledBytes());
      neighbours.push((await get(stack.url, '/External/Quick', { timeoutMs: 10_000 })).body);
    }
    const [curls, raws] = [(await uploads).slice(0, 4), (await uploads).slice(4)];
    expect(curls).to.deep.equal(['503', '503', '503', '503']);
    for (const answer of raws) {
      expect(answer).to.match(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
      expect(answer).to.match(/\r\nRetry-After: 5\r\n/i);
      expect(answer).to.match(/\r\nConnection: close\r\n/i);
    }
    expect(most, 'the most the spool directory held').to.be.at.most(BOUND);
    expect(neighbours.every((body) => body === 'quick') && neighbours.length > 0, `${neighbours.length} neighbours`).to.equal(true);
    await eventually(() => (spooledBytes() === 0 ? true : undefined), 3000, 'an empty spool directory');
    await eventually(
      () => (readHostEvents(sandbox).filter((e) => e.includes('reached --spool-max-size (4194304)')).length === 8 ? true : undefined),
      3000,
      "the 503s' eight host.log lines",
    );
  });

  it('answers a declared Content-Length past it 413 without reading the body, and serves one within it', async function () {
    const port = Number(new URL(stack.url).port);
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('latin1').on('data', (text: string) => (answer += text));
    socket.on('error', () => {});
    socket.write(`POST /External/Upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${UPLOAD_BYTES}\r\n\r\n`);
    await once(socket, 'close');
    expect(answer).to.match(/^HTTP\/1\.1 413 Request Entity Too Large\r\n/);
    await eventually(
      () => readHostEvents(sandbox).find((e) => e.includes(`Content-Length of ${UPLOAD_BYTES} bytes is larger than --spool-max-size`)),
      3000,
      'the 413 line',
    );
    const within = await get(stack.url, '/External/Upload', { method: 'POST', body: 'w'.repeat(1024 * 1024) });
    expect(within.body).to.equal(`got ${1024 * 1024}`);
  });
});
