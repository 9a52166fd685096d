// Files from www/public through the proxy, and what must never be served from it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

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
    const line = await eventually(() => readLog(sandbox, 'access.log').find((l) => l.includes('"GET /favicon.ico HTTP/1.1"')), 3000, 'access line');
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

  for (const path of ['/../controllers/Secret.ts', '/%2e%2e/controllers/Secret.ts', '/..%2fcontrollers/Secret.ts', '/%2e%2e%2f%2e%2e%2fpackage.json', '/..%2f..%2fpackage.json', '/%2e%2e/%2e%2e/package.json']) {
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
      const logged = () => readLog(sandbox, 'error.log').filter((l) => l.includes(`File does not exist: ${join(sandbox.publicDir, 'late.ico')}`));
      await eventually(() => (logged().length === 2 ? true : undefined), 2000, 'a log line for each miss');
      writeFileSync(join(sandbox.publicDir, 'late.ico'), Buffer.from([0, 0, 1, 0, 9]));
      const reply = await eventually(async () => {
        const r = await get(stack.url, '/late.ico');
        return r.status === 200 ? r : undefined;
      }, 2000, 'the new file');
      expect(reply.headers['content-length']).to.equal('5');
    });

    it('serves the new content after a file changes', async function () {
      writeFileSync(join(sandbox.publicDir, 'page.html'), 'first\n');
      expect((await get(stack.url, '/page.html')).body).to.equal('first\n');
      expect((await get(stack.url, '/page.html')).body).to.equal('first\n'); // now from memory
      writeFileSync(join(sandbox.publicDir, 'page.html'), 'second version\n');
      await eventually(async () => ((await get(stack.url, '/page.html')).body === 'second version\n' ? true : undefined), 2000, 'the change');
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

  it('answers a malformed escape with 400', async function () {
    expect((await get(stack.url, '/%E0%A4%A')).status).to.equal(400);
  });

  it('answers other methods with 405 and Allow', async function () {
    const reply = await get(stack.url, '/index.html', { method: 'POST' });
    expect(reply.status).to.equal(405);
    expect(reply.headers.allow).to.equal('GET, HEAD');
  });
});
