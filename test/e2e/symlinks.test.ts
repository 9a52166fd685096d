// Symbolic links in www/public and www/controllers through the real stack, in each --follow-symlinks
// mode: owner (the default) follows a link only to its own root and its own owner, on follows every
// link, off none. A refused file is Apache's 403 with AH00037; a refused controller is a load failure.
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readHostEvents, readLog, ROOT, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const OUTSIDE_SECRET = 'OUTSIDE-SECRET-6c1f\n';
const OUTSIDE_RAN = 'outside controller ran';
const INSIDE_RAN = 'inside controller ran';
const CSS = `body { color: black; }\n${'/* padding */\n'.repeat(100)}`;
const OUTSIDE_GZ_TEXT = 'OUTSIDE-PRECOMPRESSED-91ab';
const isRoot = process.getuid?.() === 0;

/**
 * www/public: real.txt, inner/page.txt, theirs.txt (uid 65534) and site.css, with links alias.txt ->
 * real.txt, innerlink -> inner, theirs-link.txt -> theirs.txt, passwd.txt -> /etc/passwd, outdir ->
 * ../../outside and site.css.gz -> ../../outside/evil.css.gz. www/controllers: lib/Real.ts, with links
 * Inside.ts -> lib/Real.ts and Outside.ts -> ../../outside/Outside.ts.
 */
function linkedSandbox(): Sandbox {
  const sandbox = makeSandbox();
  const pub = (name: string) => join(sandbox.publicDir, name);
  const outside = join(sandbox.dir, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), OUTSIDE_SECRET);
  writeFileSync(join(outside, 'Outside.ts'), `export default () => '${OUTSIDE_RAN}';\n`);
  writeFileSync(join(outside, 'evil.css.gz'), gzipSync(OUTSIDE_GZ_TEXT));

  writeFileSync(pub('real.txt'), 'real\n');
  mkdirSync(pub('inner'));
  writeFileSync(pub('inner/page.txt'), 'page\n');
  writeFileSync(pub('theirs.txt'), 'theirs\n');
  if (isRoot) chownSync(pub('theirs.txt'), 65534, 65534);
  writeFileSync(pub('site.css'), CSS);
  symlinkSync('real.txt', pub('alias.txt'));
  symlinkSync('inner', pub('innerlink'));
  symlinkSync('theirs.txt', pub('theirs-link.txt'));
  symlinkSync('/etc/passwd', pub('passwd.txt'));
  symlinkSync('../../outside', pub('outdir'));
  symlinkSync('../../outside/evil.css.gz', pub('site.css.gz'));

  mkdirSync(join(sandbox.controllers, 'lib'));
  writeFileSync(join(sandbox.controllers, 'lib', 'Real.ts'), `export default () => '${INSIDE_RAN}';\n`);
  symlinkSync('lib/Real.ts', join(sandbox.controllers, 'Inside.ts'));
  symlinkSync('../../outside/Outside.ts', join(sandbox.controllers, 'Outside.ts'));
  return sandbox;
}

/** The body after Content-Encoding is undone (fetch decodes gzip). */
async function decodedGzip(stack: Running, path: string): Promise<{ encoding: string | null; body: string }> {
  const response = await fetch(new URL(path, stack.url), { headers: { 'accept-encoding': 'gzip' } });
  return { encoding: response.headers.get('content-encoding'), body: await response.text() };
}

/** Asks twice: the second answer may come from the proxy's cache, and must be the same. */
async function twice(stack: Running, path: string) {
  const first = await get(stack.url, path);
  const second = await get(stack.url, path);
  expect(second.status, `second ${path}`).to.equal(first.status);
  expect(second.body, `second ${path}`).to.equal(first.body);
  return first;
}

function startWith(mode: 'owner' | 'on' | 'off' | undefined, sandbox: Sandbox): Promise<Running> {
  const flags = mode === undefined ? [] : ['--follow-symlinks', mode];
  return startStack(sandbox, ['--workers', '1', '--proxy-workers', '1', ...flags]);
}

describe('symbolic links under www/', function () {
  describe('by default (--follow-symlinks owner)', function () {
    let sandbox: Sandbox;
    let stack: Running;
    before(async function () {
      sandbox = linkedSandbox();
      stack = await startWith(undefined, sandbox);
    });
    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    it('answers 403 for a file linked to /etc/passwd, with an AH00037 line naming the link and why', async function () {
      const reply = await twice(stack, '/passwd.txt');
      expect(reply.status).to.equal(403);
      expect(reply.body).not.to.contain('root:x:0:');
      const line = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes('AH00037')), 3000, 'the AH00037 line');
      expect(line).to.match(
        /\[core:error\] .*\[client 127\.0\.0\.1:\d+\] AH00037: Symbolic link not allowed or link target not accessible: /,
      );
      expect(line).to.contain(`${join(sandbox.publicDir, 'passwd.txt')} (its target /etc/passwd is outside ${sandbox.publicDir})`);
    });

    it('answers 403 for a file under a directory linked out of the root', async function () {
      const reply = await twice(stack, '/outdir/secret.txt');
      expect(reply.status).to.equal(403);
      expect(reply.body).not.to.contain(OUTSIDE_SECRET);
      await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.includes(`${join(sandbox.publicDir, 'outdir')} (its target`)),
        3000,
        'the AH00037 line naming the linked directory',
      );
    });

    it('serves a file through a link to a file, and through a linked directory, inside the root', async function () {
      expect(await twice(stack, '/alias.txt')).to.deep.include({ status: 200, body: 'real\n' });
      expect(await twice(stack, '/innerlink/page.txt')).to.deep.include({ status: 200, body: 'page\n' });
    });

    it('answers 403 for a link inside the root whose target has another owner', async function () {
      if (!isRoot) this.skip(); // the fixture's chown needs root
      expect((await twice(stack, '/theirs-link.txt')).status).to.equal(403);
      expect((await get(stack.url, '/theirs.txt')).status, 'the file itself').to.equal(200);
    });

    it('does not serve a precompressed sibling linked out of the root: the file is compressed instead', async function () {
      const reply = await decodedGzip(stack, '/site.css');
      expect(reply.body).to.equal(CSS);
      expect(reply.body).not.to.contain(OUTSIDE_GZ_TEXT);
    });

    it('does not run a controller linked out of the tree: a load failure naming the link and why', async function () {
      const reply = await twice(stack, '/External/Outside');
      expect(reply.status).to.equal(500);
      expect(reply.body).not.to.contain(OUTSIDE_RAN);
      const link = join(sandbox.controllers, 'Outside.ts');
      const expected = `Failed opening controller script ${link}: Symbolic link not allowed or link target not accessible: ${link} (its target ${join(sandbox.dir, 'outside', 'Outside.ts')} is outside ${sandbox.controllers})`;
      await eventually(() => readHostEvents(sandbox).find((l) => l.includes(expected)), 3000, 'the host.log line');
      await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.includes('mod_fcgid: stderr: PHP Fatal error:') && l.includes(expected)),
        3000,
        'the relayed stderr line',
      );
    });

    it('runs a controller linked to a file inside the tree', async function () {
      expect(await twice(stack, '/External/Inside')).to.deep.include({ status: 200, body: INSIDE_RAN });
    });

    it('extqs check loads the linked controller it may follow and names the one it may not (exit 1)', function () {
      const result = spawnSync(process.execPath, ['bin/extqs.js', 'check', '--www', sandbox.www, '--logs', sandbox.logs], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(result.status, result.stderr).to.equal(1);
      expect(result.stdout).to.contain(`controller ${join(sandbox.controllers, 'Inside.ts')}: ok`);
      expect(result.stdout).to.contain(
        `controller ${join(sandbox.controllers, 'Outside.ts')}: never served: Symbolic link not allowed or link target not accessible: ${join(sandbox.controllers, 'Outside.ts')} (its target`,
      );
      expect(result.stdout).not.to.contain(OUTSIDE_RAN);
    });
  });

  describe('with --follow-symlinks on (Apache FollowSymLinks)', function () {
    let sandbox: Sandbox;
    let stack: Running;
    before(async function () {
      sandbox = linkedSandbox();
      stack = await startWith('on', sandbox);
    });
    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    it('follows every link: out of the root, to another owner, to a directory', async function () {
      const passwd = await twice(stack, '/passwd.txt');
      expect(passwd.status).to.equal(200);
      expect(passwd.body).to.contain('root:x:0:');
      expect(await twice(stack, '/outdir/secret.txt')).to.deep.include({ status: 200, body: OUTSIDE_SECRET });
      expect(await twice(stack, '/alias.txt')).to.deep.include({ status: 200, body: 'real\n' });
      expect(await twice(stack, '/theirs-link.txt')).to.deep.include({ status: 200, body: 'theirs\n' });
      expect((await decodedGzip(stack, '/site.css')).body).to.equal(OUTSIDE_GZ_TEXT);
    });

    it('runs controllers linked out of the tree and inside it', async function () {
      expect(await twice(stack, '/External/Outside')).to.deep.include({ status: 200, body: OUTSIDE_RAN });
      expect(await twice(stack, '/External/Inside')).to.deep.include({ status: 200, body: INSIDE_RAN });
    });
  });

  describe('with --follow-symlinks off', function () {
    let sandbox: Sandbox;
    let stack: Running;
    before(async function () {
      sandbox = linkedSandbox();
      stack = await startWith('off', sandbox);
    });
    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    it('follows no link, even one inside the root: 403 for each, and plain files still served', async function () {
      for (const path of ['/passwd.txt', '/outdir/secret.txt', '/alias.txt', '/innerlink/page.txt', '/theirs-link.txt']) {
        expect((await twice(stack, path)).status, path).to.equal(403);
      }
      expect(await twice(stack, '/real.txt')).to.deep.include({ status: 200, body: 'real\n' });
      const line = await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.includes(`${join(sandbox.publicDir, 'alias.txt')} (symbolic links`)),
        3000,
        'the AH00037 line',
      );
      expect(line).to.contain('(symbolic links are not followed (--follow-symlinks off))');
    });

    it('runs no linked controller, even one inside the tree', async function () {
      expect((await twice(stack, '/External/Inside')).status).to.equal(500);
      expect((await twice(stack, '/External/Outside')).status).to.equal(500);
      await eventually(
        () =>
          readHostEvents(sandbox).find((l) =>
            l.includes(`${join(sandbox.controllers, 'Inside.ts')} (symbolic links are not followed (--follow-symlinks off))`),
          ),
        3000,
        'the host.log line',
      );
    });
  });
});
