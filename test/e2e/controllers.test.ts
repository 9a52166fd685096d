// Controllers dropped into www/controllers of a running stack: results, failures, PHP query semantics,
// hostile names, and reload without restart (docs/design.md §7; docs/operations.md, "What each request gets").
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { callMarker, eventually, makeSandbox, readHostEvents, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

describe('controllers in a running stack', function () {
  let sandbox: Sandbox;
  let stack: Running;
  const write = (file: string, source: string) => writeFileSync(join(sandbox.controllers, file), source);
  const body = async (path: string) => (await get(stack.url, path)).body;

  before(async function () {
    sandbox = makeSandbox();
    // One worker: these tests are about one registry's behaviour (each worker has its own).
    stack = await startStack(sandbox, ['--workers', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  describe('when a controller returns a value', function () {
    it('sends an object as JSON', async function () {
      write('Echo.ts', `export default ({ query, rawQuery, method, path }: any) => ({ query, rawQuery, method, path });\n`);
      const reply = await get(stack.url, '/External/Echo?sn=123&no=');
      expect(reply.status).to.equal(200);
      expect(reply.headers['content-type']).to.equal('application/json; charset=utf-8');
      expect(JSON.parse(reply.body)).to.deep.equal({
        query: { sn: '123', no: '' },
        rawQuery: 'sn=123&no=',
        method: 'GET',
        path: '/External/Echo',
      });
    });

    it('sends a string as text/html, as PHP echoes', async function () {
      write('Hello.js', `module.exports = () => '<p>hello</p>';\n`);
      const reply = await get(stack.url, '/External/Hello');
      expect(reply.status).to.equal(200);
      expect(reply.headers['content-type']).to.equal('text/html; charset=UTF-8');
      expect(reply.body).to.equal('<p>hello</p>');
    });

    it('sends a Response with its own status, headers and body', async function () {
      write(
        'Created.ts',
        `export default () => new Response('made', { status: 201, headers: { 'x-thing': 'yes', 'content-type': 'text/plain' } });\n`,
      );
      const reply = await get(stack.url, '/External/Created');
      expect(reply.status).to.equal(201);
      expect(reply.headers['x-thing']).to.equal('yes');
      expect(reply.body).to.equal('made');
    });
  });

  describe('when the path goes on after the controller name', function () {
    it('reaches the controller with a trailing slash, as the legacy front controller did', async function () {
      write('Trail.ts', `export default ({ path, pathInfo }: any) => ({ path, pathInfo });\n`);
      const reply = await get(stack.url, '/External/Trail/?sn=1');
      expect(reply.status).to.equal(200);
      expect(JSON.parse(reply.body)).to.deep.equal({ path: '/External/Trail/', pathInfo: '/' });
    });

    it('gives the rest of the path, decoded, as pathInfo (PATH_INFO)', async function () {
      write('Info.ts', `export default ({ pathInfo }: any) => ({ pathInfo });\n`);
      expect(JSON.parse(await body('/External/Info/a/b%20c'))).to.deep.equal({ pathInfo: '/a/b c' });
      expect(JSON.parse(await body('/External/Info'))).to.deep.equal({ pathInfo: '' });
    });

    it('fails a missing controller named before a slash as a missing controller, naming its file', async function () {
      const reply = await get(stack.url, '/External/Nowhere/');
      expect(reply.status).to.equal(500);
      const id = reply.headers['x-request-id'] as string;
      const line = await eventually(() => readLog(sandbox, 'host.log').find((l) => l.includes(`[req ${id}]`)), 3000, 'host.log line');
      expect(line).to.contain(`Failed opening controller script ${join(sandbox.controllers, 'Nowhere.ts')}: No such file or directory`);
    });
  });

  describe("when the query uses PHP's conventions", function () {
    const cases: [string, unknown][] = [
      ['all_alarm&all', { all_alarm: '', all: '' }],
      ['sn=123&no=', { sn: '123', no: '' }],
      ['sn=1&sn=2', { sn: '2' }],
      ['a[]=1&a[]=2', { a: ['1', '2'] }],
      ['a[x]=1&a[y][z]=2', { a: { x: '1', y: { z: '2' } } }],
      ['b.c=1&d+e=2', { b_c: '1', d_e: '2' }],
    ];
    for (const [raw, expected] of cases) {
      it(`parses ?${raw} as $_GET does`, async function () {
        write('Query.ts', `export default ({ query }: any) => ({ query });\n`);
        expect(JSON.parse(await body(`/External/Query?${raw}`)).query).to.deep.equal(expected);
      });
    }
  });

  describe('when a controller returns what JSON cannot hold', function () {
    it('answers a bare 500 and logs the serialisation error', async function () {
      write('Big.ts', `export default () => ({ n: 1n });\n`);
      const reply = await get(stack.url, '/External/Big');
      expect(reply.status).to.equal(500);
      expect(reply.body).not.to.contain('BigInt');
      const id = reply.headers['x-request-id'] as string;
      const line = await eventually(() => readLog(sandbox, 'host.log').find((l) => l.includes(`[req ${id}]`)), 3000, 'host.log line');
      expect(line).to.contain('BigInt');
    });
  });

  describe('when a controller throws', function () {
    it('answers 500 without the stack and logs the stack with the request id', async function () {
      // Types and blank lines shift the transpiled lines: the log must name the TypeScript line (5).
      write(
        'Boom.ts',
        `interface Unused {\n  a: number;\n}\ntype Alias = string;\nexport default (): never => { throw new Error('kaboom-marker'); };\n`,
      );
      const reply = await get(stack.url, '/External/Boom?sn=1');
      expect(reply.status).to.equal(500);
      expect(reply.body).not.to.contain('kaboom-marker');
      expect(reply.body).not.to.contain('Boom.ts');
      const id = reply.headers['x-request-id'] as string;
      const line = await eventually(() => readHostEvents(sandbox).find((l) => l.includes(`[req ${id}]`)), 3000, 'host.log line');
      expect(line).to.contain('Uncaught exception in controller');
      expect(line).to.contain('Error: kaboom-marker');
      expect(line).to.contain(`${join(sandbox.controllers, 'Boom.ts')}:5:`);
    });
  });

  describe('when a controller cannot be loaded', function () {
    it('treats a module that throws while loading as a load failure, with its TypeScript line', async function () {
      write(
        'ThrowsAtLoad.ts',
        `type T = number;\n\nconst limit: T = 1;\nif (limit) throw new Error('load-marker');\nexport default () => 'never';\n`,
      );
      const reply = await get(stack.url, '/External/ThrowsAtLoad');
      expect(reply.status).to.equal(500);
      const id = reply.headers['x-request-id'] as string;
      const line = await eventually(() => readHostEvents(sandbox).find((l) => l.includes(`[req ${id}]`)), 3000, 'host.log line');
      expect(line).to.contain(`Controller script ${join(sandbox.controllers, 'ThrowsAtLoad.ts')} threw while loading: Error: load-marker`);
      expect(line).to.contain(`${join(sandbox.controllers, 'ThrowsAtLoad.ts')}:4:`);
    });

    it('treats a module without a default export function as a load failure', async function () {
      write('NoDefault.ts', `export const x = 1;\n`);
      const reply = await get(stack.url, '/External/NoDefault');
      expect(reply.status).to.equal(500);
      const id = reply.headers['x-request-id'] as string;
      const line = await eventually(() => readLog(sandbox, 'host.log').find((l) => l.includes(`[req ${id}]`)), 3000, 'host.log line');
      expect(line).to.contain('has no default export function');
    });

    it('fails a controller path that is not a regular file (a FIFO) without blocking the worker', async function () {
      execFileSync('mkfifo', [join(sandbox.controllers, 'Pipe.ts')]);
      const reply = await get(stack.url, '/External/Pipe');
      expect(reply.status).to.equal(500);
      const id = reply.headers['x-request-id'] as string;
      const line = await eventually(() => readLog(sandbox, 'host.log').find((l) => l.includes(`[req ${id}]`)), 3000, 'host.log line');
      expect(line).to.contain(`${join(sandbox.controllers, 'Pipe.ts')} is not a regular file`);
      write('AfterPipe.ts', `export default () => 'still serving';\n`);
      expect(await body('/External/AfterPipe')).to.equal('still serving');
    });

    it('reports a syntax error with file:line and answers like a missing controller', async function () {
      write('Broken.ts', `export default () => ({ a: 1 \n`);
      const reply = await get(stack.url, '/External/Broken');
      expect(reply.status).to.equal(500);
      const id = reply.headers['x-request-id'] as string;
      const line = await eventually(() => readLog(sandbox, 'host.log').find((l) => l.includes(`[req ${id}]`)), 3000, 'host.log line');
      expect(line).to.contain(`Parse error in controller script ${join(sandbox.controllers, 'Broken.ts')}:2:`);
    });
  });

  describe('when the controller name is not an identifier', function () {
    for (const path of [
      '/External/..%2f..%2fpackage.json',
      '/External/.hidden',
      '/External/a.b',
      '/External/%00',
      '/External/9lives',
      '/External/x%2fy',
    ]) {
      it(`answers ${path} 404 with Apache's line, as the legacy's route matched no script, loading no file its name spells`, async function () {
        // A decoy where the name, taken as a file name, would lead; loading it marks it (a name with NUL has none).
        const name = decodeURIComponent(path.slice('/External/'.length));
        const decoy = callMarker(sandbox, `decoy-${Buffer.from(name).toString('hex')}`);
        const decoyFile = join(sandbox.controllers, `${name}.ts`);
        if (!name.includes('\0')) {
          mkdirSync(dirname(decoyFile), { recursive: true });
          writeFileSync(decoyFile, `${decoy.statement}\nexport default () => 'should never be reached';\n`);
        }
        const reply = await get(stack.url, path);
        expect(reply.status).to.equal(404);
        expect(reply.body).to.contain('<title>404 Not Found</title>');
        const id = reply.headers['x-request-id'] as string;
        const line = await eventually(
          () => readLog(sandbox, 'error.log').find((l) => l.endsWith(`request_id: ${id}`)),
          3000,
          'error.log line',
        );
        expect(line).to.match(/%2f|%00/.test(path) ? /AH00026: found %2f \(encoded '\/'\) in URI path/ : /AH00128: File does not exist: /);
        // The proxy answered it: a load would have come before the answer.
        expect(decoy.calls(), `${decoyFile} was loaded`).to.equal(0);
      });
    }
  });

  describe('when controller files change while the stack runs', function () {
    it('serves a newly added controller on the very next request', async function () {
      expect((await get(stack.url, '/External/Fresh')).status).to.equal(500);
      write('Fresh.ts', `export default () => ({ v: 'fresh' });\n`);
      expect(await body('/External/Fresh')).to.equal('{"v":"fresh"}');
    });

    it('serves the new code after a change, without a restart', async function () {
      write('Versioned.ts', `export default () => ({ v: 1 });\n`);
      expect(await body('/External/Versioned')).to.equal('{"v":1}');
      write('Versioned.ts', `export default () => ({ v: 2 });\n`);
      await eventually(async () => ((await body('/External/Versioned')) === '{"v":2}' ? true : undefined), 2000, 'version 2');
    });

    it('ends on the final content when two saves come 20 ms apart', async function () {
      write('Twice.ts', `export default () => ({ v: 'first' });\n`);
      expect(await body('/External/Twice')).to.equal('{"v":"first"}');
      write('Twice.ts', `export default () => ({ v: 'second' });\n`);
      await new Promise((r) => setTimeout(r, 20)); // the scenario itself: a second save 20 ms later
      write('Twice.ts', `export default () => ({ v: 'third' });\n`);
      await eventually(async () => ((await body('/External/Twice')) === '{"v":"third"}' ? true : undefined), 2000, 'the final save');
    });

    it('follows an atomic replace (write a temp file, rename over)', async function () {
      write('Atomic.ts', `export default () => ({ v: 'old' });\n`);
      expect(await body('/External/Atomic')).to.equal('{"v":"old"}');
      write('.Atomic.ts.tmp', `export default () => ({ v: 'new' });\n`);
      renameSync(join(sandbox.controllers, '.Atomic.ts.tmp'), join(sandbox.controllers, 'Atomic.ts'));
      await eventually(async () => ((await body('/External/Atomic')) === '{"v":"new"}' ? true : undefined), 2000, 'the renamed version');
    });

    it('goes back to the load failure when the file is deleted', async function () {
      write('Doomed.ts', `export default () => ({ alive: true });\n`);
      expect((await get(stack.url, '/External/Doomed')).status).to.equal(200);
      rmSync(join(sandbox.controllers, 'Doomed.ts'));
      await eventually(async () => ((await get(stack.url, '/External/Doomed')).status === 500 ? true : undefined), 2000, 'the 500');
      // The host writes its line after it drops the connection, so the 500 can arrive first.
      const failure = `Failed opening controller script ${join(sandbox.controllers, 'Doomed.ts')}`;
      await eventually(() => (readLog(sandbox, 'host.log').some((l) => l.includes(failure)) ? true : undefined), 2000, 'the host.log line');
    });

    it('lets a request in flight finish on the old version, and disposes that version only after it', async function () {
      const marker = join(sandbox.dir, 'slow-disposed.txt');
      const called = callMarker(sandbox, 'SlowSwap');
      write(
        'SlowSwap.ts',
        `import { writeFileSync } from 'node:fs';\nexport default () => { ${called.statement} return new Promise((r) => setTimeout(() => r('v1 done'), 800)); };\nexport function dispose() { writeFileSync(${JSON.stringify(marker)}, 'v1'); }\n`,
      );
      const inFlight = get(stack.url, '/External/SlowSwap');
      await called.reached();
      write('SlowSwap.ts', `export default () => 'v2';\n`);
      // Wait for the install itself: a request sent before it would run on v1 for 800 ms too.
      const loads = () => readLog(sandbox, 'host.log').filter((l) => l.includes('Loaded controller SlowSwap'));
      await eventually(() => (loads().length >= 2 ? true : undefined), 2000, 'v2 to be installed');
      expect(existsSync(marker), 'disposed while a request was still running on it').to.equal(false);
      // The one worker runs one request at a time (php-fpm's model): the next one, on v2, waits for v1's to end.
      expect(await body('/External/SlowSwap')).to.equal('v2');
      expect((await inFlight).body).to.equal('v1 done');
      await eventually(() => (existsSync(marker) ? true : undefined), 2000, 'dispose after the last request');
    });

    it('keeps the last good version serving when a broken one is saved, and logs file:line', async function () {
      write('Sturdy.ts', `export default () => ({ v: 'good' });\n`);
      expect(await body('/External/Sturdy')).to.equal('{"v":"good"}');
      write('Sturdy.ts', `export default () => ({ v: 'bad' \n\n`);
      const file = join(sandbox.controllers, 'Sturdy.ts');
      await eventually(
        () => readLog(sandbox, 'host.log').find((l) => l.includes(`Reload of controller Sturdy failed`) && l.includes(`${file}:3:`)),
        3000,
        'the compile error',
      );
      expect(await body('/External/Sturdy')).to.equal('{"v":"good"}');
      write('Sturdy.ts', `export default () => ({ v: 'fixed' });\n`);
      await eventually(async () => ((await body('/External/Sturdy')) === '{"v":"fixed"}' ? true : undefined), 2000, 'the fixed version');
    });
  });
});
