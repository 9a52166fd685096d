// A controller's request input against PHP's own: each request goes through the running stack to a
// controller that returns post, files, cookies and the raw body, and to php-cgi 8.2 (Debian's
// php8.2-cgi, the legacy stack's PHP) running test/fixtures/phpInput.php with the same php.ini limits.
// The two answers must be equal (docs/controllers.md, "Request input").
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { FORWARDERS } from '../../common/settings.ts';
import { get } from '../helpers/http.ts';
import { askPhp, disposition, ECHO_CONTROLLER, MULTIPART, part, requirePhpCgi, type PhpRequest } from '../helpers/php.ts';
import { eventually, makeSandbox, readHostEvents, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** The limits both sides run with: small, so each is crossed by a small request. */
const LIMITS = { postMaxSize: 4096, uploadMaxFilesize: 64, maxFileUploads: 3 };

interface Case extends PhpRequest {
  title: string;
}

const CASES: Case[] = [
  {
    title: 'a urlencoded form: brackets, the last duplicate, name mangling, + and escapes',
    contentType: 'application/x-www-form-urlencoded',
    body: 'a=1&b[]=2&b[]=3&c.d=4&a=5&e[x][y]=6&f+g=h+i%20j&%C3%A9=%E2%82%AC&flag&[x]=skipped&k[=7',
  },
  {
    title: 'a urlencoded form with a charset parameter and an upper-case type',
    contentType: 'APPLICATION/X-WWW-FORM-URLENCODED; charset=UTF-8',
    body: 'x=1',
  },
  {
    title: 'multipart fields and files: arrays, nested names, no file chosen, a path, a part type with parameters',
    contentType: MULTIPART,
    body:
      part(disposition('field'), 'value one') +
      part(`${disposition('up', 'a.txt')}\r\nContent-Type: text/plain; charset=utf-8`, 'hello') +
      part(disposition('many[]', 'b.txt'), 'bb') +
      part(disposition('many[]', ''), '') +
      part(`${disposition('deep[k][j]', 'dir/sub/c.bin')}\r\nContent-Type: application/octet-stream`, 'ccc') +
      part(disposition('list[k][]'), 'x') +
      part(disposition('z.y'), 'dotted') +
      part(disposition('field'), 'value two') +
      '--XX--\r\n',
  },
  {
    title: 'a quoted boundary and an escaped quote in a file name',
    contentType: 'multipart/form-data; boundary="XX"',
    body: part('Content-Disposition: form-data; name="q"; filename="say \\"hi\\".txt"', 'hi') + '--XX--\r\n',
  },
  {
    title: "files over the form's MAX_FILE_SIZE and over upload_max_filesize",
    contentType: MULTIPART,
    body:
      part(disposition('MAX_FILE_SIZE'), '8') +
      part(disposition('small', 's.txt'), '12345678') +
      part(disposition('big', 'b.txt'), '123456789') +
      part(disposition('MAX_FILE_SIZE'), '0') +
      part(disposition('huge', 'h.txt'), 'x'.repeat(65)) +
      part(disposition('fits', 'f.txt'), 'x'.repeat(64)) +
      '--XX--\r\n',
  },
  {
    title: 'more files than max_file_uploads (a file not chosen does not count)',
    contentType: MULTIPART,
    body:
      part(disposition('none', ''), '') +
      ['a', 'b', 'c', 'd', 'e'].map((name) => part(disposition(name, `${name}.txt`), name)).join('') +
      part(disposition('after'), 'field after the files') +
      '--XX--\r\n',
  },
  {
    title: 'a multipart body that ends inside a file',
    contentType: MULTIPART,
    body: part(disposition('first'), 'kept') + `--XX\r\n${disposition('cut', 'cut.txt')}\r\n\r\npart of it`,
  },
  {
    title: 'a form over post_max_size: nothing parsed, the body still in php://input',
    contentType: 'application/x-www-form-urlencoded',
    body: `a=${'x'.repeat(4096)}`,
  },
  { title: 'multipart without a boundary', contentType: 'multipart/form-data', body: 'junk' },
  { title: 'a JSON body: only php://input', contentType: 'application/json', body: '{"a":[1,2]}' },
  { title: 'a body without a Content-Type', body: 'raw bytes' },
  {
    title: 'cookies: the first duplicate, spaces, raw-url-decoding (+ stays), names as written, brackets',
    cookie: 'x=1; x=2;  y=a+b%20c; %61=z; c.d=1; arr[k]=v; arr[k]=w; =novalue; bare; list[]=1; list[]=2',
  },
];

describe("a controller's request input, against php-cgi 8.2", function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    requirePhpCgi();
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Echo.ts'), ECHO_CONTROLLER);
    stack = await startStack(sandbox, [
      '--workers',
      '1',
      '--post-max-size',
      String(LIMITS.postMaxSize),
      '--upload-max-filesize',
      String(LIMITS.uploadMaxFilesize),
      '--max-file-uploads',
      String(LIMITS.maxFileUploads),
    ]);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  for (const request of CASES) {
    it(request.title, async function () {
      const headers: Record<string, string> = {};
      if (request.contentType !== undefined) headers['Content-Type'] = request.contentType;
      if (request.cookie !== undefined) headers.Cookie = request.cookie;
      const reply = await get(stack.url, '/External/Echo', { method: 'POST', headers, body: request.body ?? '' });
      expect(reply.status, reply.body).to.equal(200);
      expect(JSON.parse(reply.body)).to.deep.equal(askPhp(request, LIMITS));
    });
  }

  it('reads and drops the rest of a body the controller ignored, then closes the connection it said it would close', async function () {
    writeFileSync(join(sandbox.controllers, 'Ignores.ts'), `export default () => 'ignored';\n`);
    const { hostname, port } = new URL(stack.url);
    const socket = connect(Number(port), hostname);
    socket.setEncoding('latin1');
    let received = '';
    socket.on('data', (chunk: string) => (received += chunk));
    let failure: Error | undefined;
    socket.on('error', (err) => (failure = err));
    const closed = once(socket, 'close');
    // 4 MB declared, 100 bytes sent: the answer comes before the rest, which is more than the buffers hold.
    socket.write('POST /External/Ignores HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n' + 'a'.repeat(100));
    await eventually(() => (received.endsWith('\r\n\r\nignored') ? true : undefined), 5000, 'the answer');
    // No keep-alive after an answer given before the body was read (docs/design.md §3.1); the rest is
    // still taken, so the client is neither reset nor left stalled until its connection times out.
    expect(received).to.match(/^Connection: close\r$/m);
    socket.write('b'.repeat(4194304 - 100));
    await closed;
    expect(failure).to.equal(undefined);
    expect(received).to.not.match(/ 400 | 408 /);
  });

  // 300 KB: more than the proxy holds before it starts sending, so the host gets it chunked, without a length
  // (a small chunked body that has all arrived is sent with its Content-Length, as mod_fcgid gives PHP one).
  for (const [kind, contentType, body] of [
    ['urlencoded', 'application/x-www-form-urlencoded', `a=${'x'.repeat(300_000)}`],
    ['multipart', MULTIPART, part(disposition('f', 'f.txt'), 'y'.repeat(300_000)) + '--XX--\r\n'],
  ] as const) {
    it(`fills nothing from a chunked ${kind} form that passes post_max_size as it streams, and still answers`, async function () {
      const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
      const { hostname, port } = new URL(stack.url);
      const socket = connect(Number(port), hostname);
      let received = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (received += chunk));
      socket.write(
        `POST /External/Echo?${kind} HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}`,
      );
      await eventually(
        () => (/\r\n\r\n[0-9a-f]+\r\n\{/.test(received) || received.includes('\r\n\r\n{') ? true : undefined),
        5000,
        'the answer',
      );
      socket.destroy();
      expect(received).to.match(/^HTTP\/1\.1 200 /);
      const json = JSON.parse(received.slice(received.indexOf('{'), received.lastIndexOf('}') + 1)) as { post: object; files: object };
      expect(json.post).to.deep.equal({});
      expect(json.files).to.deep.equal({});
      await eventually(
        () =>
          readHostEvents(sandbox).find(
            (line) => line.includes(`exceeds ${LIMITS.postMaxSize} bytes`) && line.includes(`/External/Echo?${kind}`),
          ),
        3000,
        'the Actual POST length warning',
      );
    });
  }

  it("logs PHP's warning when a form passes post_max_size", async function () {
    await get(stack.url, '/External/Echo', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'b='.padEnd(5000, 'y'),
    });
    await eventually(
      () =>
        readHostEvents(sandbox).find((line) =>
          line.includes(
            `PHP Warning:  PHP Request Startup: POST Content-Length of 5000 bytes exceeds the limit of ${LIMITS.postMaxSize} bytes`,
          ),
        ),
      3000,
      'the post_max_size warning in host.log',
    );
  });

  it('deletes the uploads and their directory when the request ends', async function () {
    writeFileSync(join(sandbox.controllers, 'Where.ts'), `export default ({ files }: any) => ({ path: files.f.tmpName });\n`);
    const reply = await get(stack.url, '/External/Where', {
      method: 'POST',
      headers: { 'Content-Type': MULTIPART },
      body: part(disposition('f', 'f.txt'), 'content') + '--XX--\r\n',
    });
    const { path } = JSON.parse(reply.body) as { path: string };
    expect(path).to.match(/extqs-upload-\d+-[^/]+\/php[^/]{6}$/);
    await eventually(() => !existsSync(dirname(path)) || undefined, 3000, 'the upload directory removed');
  });
});

/** Sends raw bytes on a fresh connection and returns all the server sent before it closed. */
function rawExchange(url: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    // The server may close while bytes are still on their way: a reset after its answer is fine.
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? undefined : reject(err)));
    socket.on('close', () => resolve(received));
  });
}

for (const forwarder of FORWARDERS) {
  describe(`LimitRequestBody at the proxy (--limit-request-body 1k, --forwarder ${forwarder})`, function () {
    let sandbox: Sandbox;
    let stack: Running;

    before(async function () {
      sandbox = makeSandbox();
      writeFileSync(
        join(sandbox.controllers, 'Size.ts'),
        `export default async ({ body }: any) => ({ size: (await body.text()).length });\n`,
      );
      stack = await startStack(sandbox, ['--workers', '1', '--limit-request-body', '1k', '--forwarder', forwarder]);
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    it('forwards a body of exactly the limit', async function () {
      const reply = await get(stack.url, '/External/Size', { method: 'POST', body: 'x'.repeat(1024) });
      expect(reply.status).to.equal(200);
      expect(JSON.parse(reply.body)).to.deep.equal({ size: 1024 });
    });

    it('answers a longer declared length 413 before reading it, logs AH01588 and closes the connection', async function () {
      const answer = await rawExchange(stack.url, 'POST /External/Size HTTP/1.1\r\nHost: x\r\nContent-Length: 1025\r\n\r\n');
      expect(answer).to.match(/^HTTP\/1\.1 413 Request Entity Too Large\r\n/);
      expect(answer).to.match(/\r\nConnection: close\r\n/i);
      expect(answer).to.include('<title>413 Request Entity Too Large</title>');
      const line = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes('AH01588')), 3000, 'the AH01588 line');
      expect(line).to.match(/\[http:info\] .*AH01588: Requested content-length of 1025 is larger than the configured limit of 1024/);
      await eventually(
        () => readLog(sandbox, 'access.log').find((l) => l.includes('"POST /External/Size HTTP/1.1" 413 ')),
        3000,
        'the 413 access line',
      );
    });

    it('cuts a chunked body when it passes the limit: 413, AH01591, the connection closed', async function () {
      const chunk = 'y'.repeat(600);
      const chunked = `${(600).toString(16)}\r\n${chunk}\r\n`.repeat(2) + '0\r\n\r\n';
      const answer = await rawExchange(
        stack.url,
        `POST /External/Size HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}`,
      );
      expect(answer).to.match(/^HTTP\/1\.1 413 /);
      expect(answer).to.match(/\r\nConnection: close\r\n/i);
      const line = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes('AH01591')), 3000, 'the AH01591 line');
      expect(line).to.match(/AH01591: Read content length of 1200 is larger than the configured limit of 1024/);
    });
  });
}
