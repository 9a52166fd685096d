// Files from www/public through the proxy, and what must never be served from it.
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const SMALL = '0123456789abcdef\n';
const BIG = 'x'.repeat(70 * 1024);

/** One file of each type a site serves, and the Content-Type it must get. */
const TYPED_FILES: Record<string, { content: string | Buffer; type: RegExp }> = {
  'page.htm': { content: '<p>x</p>', type: /^text\/html; charset=utf-8$/i },
  'site.css': { content: 'body{}', type: /^text\/css; charset=utf-8$/i },
  'app.js': { content: 'void 0;', type: /^(text|application)\/javascript; charset=utf-8$/i },
  'data.json': { content: '{}', type: /^application\/json; charset=utf-8$/i },
  'pixel.png': { content: Buffer.from('89504e470d0a1a0a', 'hex'), type: /^image\/png$/ },
  'logo.svg': { content: '<svg xmlns="http://www.w3.org/2000/svg"/>', type: /^image\/svg\+xml$/ },
  'icon.ico': { content: Buffer.from([0, 0, 1, 0]), type: /^image\/(vnd\.microsoft\.icon|x-icon)$/ },
};

describe('static files from www/public', function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.publicDir, 'index.html'), '<h1>extqs</h1>\n');
    writeFileSync(join(sandbox.publicDir, 'favicon.ico'), Buffer.from([0, 0, 1, 0]));
    writeFileSync(join(sandbox.publicDir, '.env'), 'SECRET=1\n');
    mkdirSync(join(sandbox.publicDir, 'docs'));
    writeFileSync(join(sandbox.publicDir, 'docs', 'index.html'), 'docs\n');
    for (const [name, body] of Object.entries(TYPED_FILES)) writeFileSync(join(sandbox.publicDir, name), body.content);
    writeFileSync(join(sandbox.publicDir, 'small.txt'), SMALL);
    writeFileSync(join(sandbox.publicDir, 'big.txt'), BIG); // past the StaticCache's 64 KB: always from the file
    mkdirSync(join(sandbox.publicDir, 'evil.example', 'dir'), { recursive: true });
    writeFileSync(join(sandbox.publicDir, 'evil.example', 'dir', 'index.html'), 'evil dir\n');
    // A legal file name on Linux, and `evil.example\dir` on Windows: `/\evil.example/dir/` is `//evil.example/dir/` to a browser.
    mkdirSync(join(sandbox.publicDir, '\\evil.example', 'dir'), { recursive: true });
    writeFileSync(join(sandbox.publicDir, '\\evil.example', 'dir', 'index.html'), 'backslash dir\n');
    writeFileSync(join(sandbox.controllers, 'Secret.ts'), `export default () => 'controller-source-marker';\n`);
    // Two levels above www/public, where /../../package.json would land.
    writeFileSync(join(sandbox.dir, 'package.json'), '{ "name": "extqs-outside-marker" }\n');
    stack = await startStack(sandbox);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('serves a file that exists, with its type and an ETag, and logs its size', async function () {
    const reply = await get(stack.url, '/favicon.ico');
    expect(reply.status).to.equal(200);
    expect(reply.headers['content-type']).to.equal('image/vnd.microsoft.icon');
    expect(reply.headers.etag).to.be.a('string');
    const line = await eventually(
      () => readLog(sandbox, 'access.log').find((l) => l.includes('"GET /favicon.ico HTTP/1.1"')),
      3000,
      'access line',
    );
    expect(line).to.contain('" 200 4 "');
  });

  it('serves index.html for / and for a directory, redirecting /docs to /docs/', async function () {
    expect((await get(stack.url, '/')).body).to.equal('<h1>extqs</h1>\n');
    const redirect = await get(stack.url, '/docs');
    expect(redirect.status).to.equal(301);
    expect(redirect.headers.location).to.equal('/docs/');
    expect((await get(stack.url, '/docs/')).body).to.equal('docs\n');
  });

  it('answers 304 to a matching If-None-Match', async function () {
    const first = await get(stack.url, '/index.html');
    const second = await get(stack.url, '/index.html', { headers: { 'If-None-Match': first.headers.etag as string } });
    expect(second.status).to.equal(304);
  });

  it('never serves dotfiles', async function () {
    const reply = await get(stack.url, '/.env');
    expect(reply.status).to.equal(404);
    expect(reply.body).not.to.contain('SECRET');
  });

  for (const path of [
    '/../controllers/Secret.ts',
    '/%2e%2e/controllers/Secret.ts',
    '/..%2fcontrollers/Secret.ts',
    '/%2e%2e%2f%2e%2e%2fpackage.json',
    '/..%2f..%2fpackage.json',
    '/%2e%2e/%2e%2e/package.json',
  ]) {
    it(`never serves anything outside www/public: ${path}`, async function () {
      const reply = await get(stack.url, path);
      expect(reply.status).to.be.oneOf([400, 403, 404]);
      expect(reply.body).not.to.contain('controller-source-marker');
      expect(reply.body).not.to.contain('extqs-outside-marker');
    });
  }

  describe('when files are served from memory', function () {
    it('serves a favicon added after it was found missing (the miss is not kept)', async function () {
      expect((await get(stack.url, '/late.ico')).status).to.equal(404);
      expect((await get(stack.url, '/late.ico')).status).to.equal(404); // answered from memory, and still logged
      const logged = () =>
        readLog(sandbox, 'error.log').filter((l) => l.includes(`File does not exist: ${join(sandbox.publicDir, 'late.ico')}`));
      await eventually(() => (logged().length === 2 ? true : undefined), 2000, 'a log line for each miss');
      writeFileSync(join(sandbox.publicDir, 'late.ico'), Buffer.from([0, 0, 1, 0, 9]));
      const reply = await eventually(
        async () => {
          const r = await get(stack.url, '/late.ico');
          return r.status === 200 ? r : undefined;
        },
        2000,
        'the new file',
      );
      expect(reply.headers['content-length']).to.equal('5');
    });

    it('serves the new content after a file changes', async function () {
      writeFileSync(join(sandbox.publicDir, 'page.html'), 'first\n');
      expect((await get(stack.url, '/page.html')).body).to.equal('first\n');
      expect((await get(stack.url, '/page.html')).body).to.equal('first\n'); // now from memory
      writeFileSync(join(sandbox.publicDir, 'page.html'), 'second version\n');
      await eventually(
        async () => ((await get(stack.url, '/page.html')).body === 'second version\n' ? true : undefined),
        2000,
        'the change',
      );
    });

    it('answers HEAD with the headers only, and a matching If-None-Match with 304', async function () {
      writeFileSync(join(sandbox.publicDir, 'head.txt'), 'body text\n');
      const first = await get(stack.url, '/head.txt');
      await get(stack.url, '/head.txt');
      const head = await get(stack.url, '/head.txt', { method: 'HEAD' });
      expect(head.status).to.equal(200);
      expect(head.body).to.equal('');
      expect(head.headers['content-length']).to.equal('10');
      expect(head.headers.etag).to.equal(first.headers.etag);
      const conditional = await get(stack.url, '/head.txt', { headers: { 'If-None-Match': first.headers.etag as string } });
      expect(conditional.status).to.equal(304);
      expect(conditional.headers.etag).to.equal(first.headers.etag);
    });
  });

  it("answers an HTTP/1.1 request without Host with Apache's 400 page, an access-log line and an AH00569 line", async function () {
    const { port } = new URL(stack.url);
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.write('GET /nohost.txt HTTP/1.1\r\nUser-Agent: probe/1\r\n\r\n');
    await once(socket, 'close');
    expect(answer).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).to.contain('<title>400 Bad Request</title>');
    expect(answer).to.match(/\r\nConnection: close\r\n/i);
    const access = await eventually(
      () => readLog(sandbox, 'access.log').find((l) => l.includes('"GET /nohost.txt HTTP/1.1"')),
      3000,
      'the access line',
    );
    expect(access).to.match(/" 400 \d+ "-" "probe\/1"$/);
    const error = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes('AH00569')), 3000, 'the error line');
    expect(error).to.contain('AH00569: client sent HTTP/1.1 request without hostname (see RFC7230 section 5.4): /nohost.txt');
  });

  describe("requests Node's parser refuses: Apache's page and an access-log line each", function () {
    const REFUSED = [
      { what: 'a request line that is not one', bytes: 'GARBAGE-LINE-1\r\n\r\n', line: '"GARBAGE-LINE-1" 400 ', status: 400 },
      {
        what: 'a header field without a colon',
        bytes: 'GET /refused-2 HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n',
        line: '"GET /refused-2 HTTP/1.1" 400 ',
        status: 400,
      },
      {
        what: 'a head past --max-header-size',
        bytes: `GET /refused-3 HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`,
        line: '"GET /refused-3 HTTP/1.1" 431 ',
        status: 431,
      },
      {
        what: 'CONNECT',
        bytes: 'CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n',
        line: '"CONNECT 127.0.0.1:22 HTTP/1.1" 405 ',
        status: 405,
      },
    ];
    for (const { what, bytes, line, status } of REFUSED) {
      it(what, async function () {
        const { port } = new URL(stack.url);
        const socket = connect(Number(port), '127.0.0.1');
        let answer = '';
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => (answer += chunk));
        socket.on('error', () => {}); // a reset after the answer, while the rest of a long head is still sent
        socket.write(bytes);
        await once(socket, 'close');
        expect(answer).to.match(new RegExp(`^HTTP/1\\.1 ${status} `));
        expect(answer).to.contain(`<title>${status} `);
        const length = Number(/\r\nContent-Length: (\d+)\r\n/i.exec(answer)?.[1]);
        const access = await eventually(
          () => readLog(sandbox, 'access.log').find((l) => l.includes(line)),
          3000,
          `the access line ${line}`,
        );
        expect(access).to.match(/^127\.0\.0\.1 - - \[/);
        expect(access).to.contain(`${line}${length} "-" "-"`);
      });
    }
  });

  it('answers a malformed escape with 400', async function () {
    expect((await get(stack.url, '/%E0%A4%A')).status).to.equal(400);
    expect((await get(stack.url, '/%zz.txt')).status).to.equal(400);
    expect((await get(stack.url, '/small%.txt')).status).to.equal(400);
  });

  it('answers a NUL byte with 400', async function () {
    expect((await get(stack.url, '/small.txt%00')).status).to.equal(400);
    expect((await get(stack.url, '/%00/small.txt')).status).to.equal(400);
  });

  it('answers traversal with 400/404 (past the root; an encoded slash) and never with the file', async function () {
    expect((await get(stack.url, '/docs/../../controllers/Secret.ts')).status).to.equal(400); // climbs above the root
    expect((await get(stack.url, '/..%2fcontrollers/Secret.ts')).status).to.equal(404); // AllowEncodedSlashes Off
    expect((await get(stack.url, '/docs/..%5c..%5cpackage.json')).status).to.equal(404);
  });

  it('answers an over-long name with 404, never 500 (ENAMETOOLONG)', async function () {
    const long = `/${'n'.repeat(300)}`;
    expect((await get(stack.url, long)).status).to.equal(404);
    expect((await get(stack.url, `/docs${long}/x.txt`)).status).to.equal(404);
    expect((await get(stack.url, `/${'deep/'.repeat(1500)}x`)).status).to.equal(404);
  });

  it('answers other methods with 405 and Allow', async function () {
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']) {
      const reply = await get(stack.url, '/index.html', { method });
      expect(reply.status, method).to.equal(405);
      expect(reply.headers.allow, method).to.equal('GET, HEAD');
    }
  });

  it('gives each file its Content-Type (html, css, js, json, png, svg, ico)', async function () {
    for (const [name, { content, type }] of Object.entries(TYPED_FILES)) {
      const reply = await get(stack.url, `/${name}`);
      expect(reply.status, name).to.equal(200);
      expect(reply.headers['content-type'], name).to.match(type);
      expect(reply.headers['content-length'], name).to.equal(String(Buffer.byteLength(content)));
    }
  });

  describe('directory redirects', function () {
    it('redirects //evil.example/dir to /evil.example/dir/, never to a protocol-relative //', async function () {
      const reply = await get(stack.url, '//evil.example/dir');
      expect(reply.status).to.equal(301);
      expect(reply.headers.location).to.equal('/evil.example/dir/');
    });

    it('escapes the backslash of /\\evil.example/dir (a browser reads /\\ as //)', async function () {
      const reply = await get(stack.url, '/\\evil.example/dir');
      expect(reply.status).to.equal(301);
      expect(reply.headers.location).to.equal('/%5Cevil.example/dir/');
      // An encoded `\` is refused as on the legacy Windows stack (AH00026): such a directory has no URL.
      expect((await get(stack.url, reply.headers.location as string)).status).to.equal(404);
    });

    it('never redirects /%2fevil.example/dir (an encoded slash is a 404, so no // either)', async function () {
      const reply = await get(stack.url, '/%2fevil.example/dir');
      expect(reply.status).to.equal(404);
      expect(reply.headers).not.to.have.property('location');
    });

    it('answers HEAD on a directory with the redirect and no body', async function () {
      const reply = await get(stack.url, '/docs', { method: 'HEAD' });
      expect(reply.status).to.equal(301);
      expect(reply.headers.location).to.equal('/docs/');
      expect(reply.body).to.equal('');
    });
  });

  // The same answers whether send reads the file or the StaticCache has it in memory.
  for (const [where, path, body] of [
    ['from the file (send)', '/big.txt', BIG],
    ['from memory (StaticCache)', '/small.txt', SMALL],
  ] as const) {
    describe(`conditional and partial requests, ${where}`, function () {
      let validators: { etag: string; lastModified: string };

      beforeEach(async function () {
        // Two GETs: the first goes through send, the second (for a small file) is already from memory.
        await get(stack.url, path);
        const reply = await get(stack.url, path);
        expect(reply.body).to.equal(body);
        validators = { etag: reply.headers.etag as string, lastModified: reply.headers['last-modified'] as string };
        expect(validators.etag).to.match(/^W\/"/);
        expect(new Date(validators.lastModified).getTime()).to.be.above(0);
      });

      it('answers HEAD with the headers of GET and no body', async function () {
        const head = await get(stack.url, path, { method: 'HEAD' });
        expect(head.status).to.equal(200);
        expect(head.body).to.equal('');
        expect(head.headers['content-length']).to.equal(String(body.length));
        expect(head.headers.etag).to.equal(validators.etag);
        expect(head.headers['last-modified']).to.equal(validators.lastModified);
      });

      it('answers If-None-Match with 304, and a stale one with 200', async function () {
        const fresh = await get(stack.url, path, { headers: { 'If-None-Match': validators.etag } });
        expect(fresh.status).to.equal(304);
        expect(fresh.body).to.equal('');
        expect(fresh.headers.etag).to.equal(validators.etag);
        expect((await get(stack.url, path, { headers: { 'If-None-Match': 'W/"stale"' } })).status).to.equal(200);
      });

      it('answers If-Modified-Since with 304, and an older date with 200', async function () {
        const fresh = await get(stack.url, path, { headers: { 'If-Modified-Since': validators.lastModified } });
        expect(fresh.status).to.equal(304);
        expect(fresh.body).to.equal('');
        expect(fresh.headers['last-modified']).to.equal(validators.lastModified);
        const older = new Date(new Date(validators.lastModified).getTime() - 60_000).toUTCString();
        const stale = await get(stack.url, path, { headers: { 'If-Modified-Since': older } });
        expect(stale.status).to.equal(200);
        expect(stale.body).to.equal(body);
      });

      it('answers Range with 206 and Content-Range', async function () {
        const reply = await get(stack.url, path, { headers: { Range: 'bytes=2-5' } });
        expect(reply.status).to.equal(206);
        expect(reply.headers['content-range']).to.equal(`bytes 2-5/${body.length}`);
        expect(reply.body).to.equal(body.slice(2, 6));
        const suffix = await get(stack.url, path, { headers: { Range: 'bytes=-3' } });
        expect(suffix.status).to.equal(206);
        expect(suffix.body).to.equal(body.slice(-3));
      });

      it('answers an unsatisfiable Range with 416 and bytes */size', async function () {
        const reply = await get(stack.url, path, { headers: { Range: `bytes=${body.length}-` } });
        expect(reply.status).to.equal(416);
        expect(reply.headers['content-range']).to.equal(`bytes */${body.length}`);
      });

      it('answers a failed If-Match or If-Unmodified-Since with 412', async function () {
        expect((await get(stack.url, path, { headers: { 'If-Match': '"other"' } })).status).to.equal(412);
        expect((await get(stack.url, path, { headers: { 'If-Match': validators.etag } })).status).to.equal(200);
        const older = new Date(new Date(validators.lastModified).getTime() - 60_000).toUTCString();
        expect((await get(stack.url, path, { headers: { 'If-Unmodified-Since': older } })).status).to.equal(412);
      });
    });
  }

  it('never answered any of the above with a 500', async function () {
    const lines = await eventually(() => {
      const all = readLog(sandbox, 'access.log');
      return all.length > 0 ? all : undefined;
    });
    expect(lines.filter((l) => /" 5\d\d /.test(l))).to.deep.equal([]);
  });
});
