// Controllers as a developer writes them: local modules under www/controllers (lib/, any depth, with or
// without the extension), a package from the application's node_modules, and edits to a helper reloading
// exactly the controllers that import it, under load too; the messages a save leaves in host.log.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readHostEvents, readLog, ROOT, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

describe('controllers that import their own modules', function () {
  let sandbox: Sandbox;
  let stack: Running;
  const write = (file: string, source: string) => {
    const path = join(sandbox.controllers, file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, source);
  };
  const body = async (path: string) => (await get(stack.url, path)).body;
  const loadLines = (name: string) => readLog(sandbox, 'host.log').filter((l) => l.includes(`Loaded controller ${name} `));

  before(async function () {
    sandbox = makeSandbox();
    // Its default export has a controller's shape: served, it would answer.
    write('lib/greet.ts', `export const greet = (who: string): string => \`hello \${who}\`;\nexport default () => 'a helper';\n`);
    write('lib/deep/shout.js', `exports.shout = (s) => s.toUpperCase();\n`);
    write('_shared/thrower.ts', `export function fail(why: string): never {\n  throw new Error(why);\n}\n`);
    // A package of the application, found from www/controllers as Node finds it.
    mkdirSync(join(sandbox.www, 'node_modules', 'pad-left'), { recursive: true });
    writeFileSync(join(sandbox.www, 'node_modules', 'pad-left', 'index.js'), `module.exports = (s, n) => String(s).padStart(n, '0');\n`);
    write(
      'Greeter.ts',
      [
        `import { greet } from './lib/greet.ts';`,
        `import { shout } from './lib/deep/shout';`,
        `import padLeft from 'pad-left';`,
        `export default ({ query }: { query: Record<string, string> }) => ({ text: shout(greet(query.who ?? 'x')), n: padLeft(7, 3) });`,
        ``,
      ].join('\n'),
    );
    write('Plain.ts', `export default () => 'plain';\n`);
    write('Thrower.ts', `import { fail } from './_shared/thrower.ts';\nexport default () => fail('from the helper');\n`);
    stack = await startStack(sandbox, ['--workers', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('bundles TypeScript and JavaScript helpers at any depth, with or without the extension, and packages from node_modules', async function () {
    const reply = await get(stack.url, '/External/Greeter?who=ann');
    expect(reply.status).to.equal(200);
    expect(JSON.parse(reply.body)).to.deep.equal({ text: 'HELLO ANN', n: '007' });
    const loaded = await eventually(() => loadLines('Greeter')[0], 3000, 'the load line');
    expect(loaded).to.contain('with 2 local modules');
  });

  it('never serves a folder of helpers as a route', async function () {
    for (const name of ['lib', 'greet']) {
      const reply = await get(stack.url, `/External/${name}`);
      expect(reply.status, name).to.equal(500);
      expect(reply.body, name).not.to.contain('a helper');
      // The missing controller's own line, not a load failure of lib/greet.ts.
      const missing = `Failed opening controller script ${join(sandbox.controllers, `${name}.ts`)}: No such file or directory`;
      await eventually(() => readLog(sandbox, 'host.log').find((l) => l.includes(missing)), 3000, `the missing-controller line of ${name}`);
    }
  });

  it("maps a helper's stack frames to the helper's own file and line", async function () {
    expect((await get(stack.url, '/External/Thrower')).status).to.equal(500);
    const helper = join(sandbox.controllers, '_shared', 'thrower.ts');
    const event = await eventually(() => readHostEvents(sandbox).find((e) => e.includes('Uncaught exception in controller')), 3000);
    expect(event).to.contain('from the helper');
    expect(event).to.contain(`${helper}:2:`);
  });

  it('reloads exactly the controllers that import an edited helper', async function () {
    // Each is loaded here, whatever ran before (the line reaches host.log through the pool, a moment later).
    expect(await body('/External/Plain')).to.equal('plain');
    expect((await get(stack.url, '/External/Greeter?who=x')).status).to.equal(200);
    const greeterLoads = await eventually(() => loadLines('Greeter').length || undefined, 3000, 'Greeter loaded');
    const plainLoads = await eventually(() => loadLines('Plain').length || undefined, 3000, 'Plain loaded');
    write('lib/greet.ts', `export const greet = (who: string): string => \`bonjour \${who}\`;\n`);
    await eventually(async () => (JSON.parse(await body('/External/Greeter?who=bo')).text === 'BONJOUR BO' ? true : undefined), 3000);
    await eventually(() => (loadLines('Greeter').length > greeterLoads ? true : undefined), 2000);
    expect(loadLines('Greeter').at(-1)).to.contain('on reload');
    expect(loadLines('Plain').length, 'Plain imports nothing: not reloaded').to.equal(plainLoads);
    // A helper two folders down counts too.
    write('lib/deep/shout.js', `exports.shout = (s) => s.toLowerCase();\n`);
    await eventually(async () => (JSON.parse(await body('/External/Greeter?who=Bo')).text === 'bonjour bo' ? true : undefined), 3000);
  });

  it('keeps the last good version when a helper breaks, names the helper file:line, and loads the fix', async function () {
    write('lib/deep/shout.js', `exports.shout = (s) => s.toLowerCase();\n`);
    write('lib/greet.ts', `export const greet = (who: string): string => \`hi \${who}\`;\n`);
    await eventually(async () => (JSON.parse(await body('/External/Greeter?who=a')).text === 'hi a' ? true : undefined), 3000);
    write('lib/greet.ts', `export const greet = (who: string): string => {\n  return who +;\n};\n`);
    const helper = join(sandbox.controllers, 'lib', 'greet.ts');
    const failure = await eventually(
      () => readLog(sandbox, 'host.log').find((l) => l.includes('Reload of controller Greeter failed') && l.includes(`${helper}:2:`)),
      3000,
      'the helper compile error',
    );
    expect(failure).to.match(/version [0-9a-f]{12} keeps serving/);
    expect(JSON.parse(await body('/External/Greeter?who=a')).text).to.equal('hi a');
    write('lib/greet.ts', `export const greet = (who: string): string => \`fixed \${who}\`;\n`);
    await eventually(async () => (JSON.parse(await body('/External/Greeter?who=a')).text === 'fixed a' ? true : undefined), 3000);
  });

  it('is type-checked with its helpers by extqs check, which names the helper file:line:column', function () {
    this.timeout(30_000);
    write('lib/typed.ts', `export const twice = (n: number): string => n * 2;\n`);
    write('Typed.ts', `import { twice } from './lib/typed.ts';\nexport default () => ({ n: twice(2) });\n`);
    const checked = spawnSync(process.execPath, ['bin/extqs.js', 'check', '--www', sandbox.www, '--logs', sandbox.logs], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(checked.status, checked.stdout + checked.stderr).to.equal(1);
    expect(checked.stdout).to.contain(`controller ${join(sandbox.controllers, 'Typed.ts')}: ok`);
    expect(checked.stdout).to.contain(
      `${join(sandbox.controllers, 'lib', 'typed.ts')}:1:45 Type 'number' is not assignable to type 'string'.`,
    );
  });

  it('refuses a local import from outside www/controllers, as a load failure', async function () {
    writeFileSync(join(sandbox.www, 'secret.ts'), `export const secret = 'outside';\n`);
    write('Outside.ts', `import { secret } from '../secret.ts';\nexport default () => secret;\n`);
    const reply = await get(stack.url, '/External/Outside');
    expect(reply.status).to.equal(500);
    expect(reply.body).not.to.contain('outside');
    await eventually(
      () => readLog(sandbox, 'host.log').find((l) => l.includes(`imports ${join(sandbox.www, 'secret.ts')}, outside`)),
      3000,
    );
  });

  it('says no version is serving when a new controller fails, and the previous one when there is one', async function () {
    write('Fresh.ts', `export default () => ({ oops: \n`);
    // The watcher loads an added file by itself, and reports it as a reload.
    const line = await eventually(() => readLog(sandbox, 'host.log').find((l) => l.includes('Reload of controller Fresh failed')), 3000);
    expect(line).to.contain('no version is serving it');
    expect(line).not.to.contain('keeps serving');
  });

  it('logs no failure for a save that is written in two steps', async function () {
    write('Steps.ts', `export default () => 'one';\n`);
    expect(await body('/External/Steps')).to.equal('one');
    // What an editor that truncates before writing leaves for a moment.
    write('Steps.ts', `export default () =>`);
    await new Promise((r) => setTimeout(r, 30)); // part of the scenario: the second half comes 30 ms later
    write('Steps.ts', `export default () => 'two';\n`);
    await eventually(async () => ((await body('/External/Steps')) === 'two' ? true : undefined), 3000);
    // Past the settle time in which a failure is reported.
    await eventually(() => (loadLines('Steps').some((l) => l.includes('on reload')) ? true : undefined), 3000);
    await new Promise((r) => setTimeout(r, 400));
    expect(readLog(sandbox, 'host.log').filter((l) => l.includes('Reload of controller Steps failed'))).to.deep.equal([]);
  });
});

describe('a helper edited under load', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    mkdirSync(join(sandbox.controllers, 'lib'));
    writeFileSync(join(sandbox.controllers, 'lib', 'version.ts'), `export const version = 0;\n`);
    writeFileSync(
      join(sandbox.controllers, 'Live.ts'),
      `import { version } from './lib/version.ts';\nexport default () => ({ v: version });\n`,
    );
    stack = await startStack(sandbox, ['--workers', '2']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('fails no request across 40 saves of the helper, and ends on the last one', async function () {
    const { hostname, port } = new URL(stack.url);
    const agent = new Agent({ keepAlive: true, maxSockets: 20 });
    const failures: string[] = [];
    let answered = 0;
    let last = -1;
    let running = true;
    const once = () =>
      new Promise<void>((resolve) => {
        const req = request({ host: hostname, port, path: '/External/Live', agent }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => {
            answered += 1;
            if (res.statusCode !== 200) failures.push(`${res.statusCode} ${text.slice(0, 80)}`);
            else last = (JSON.parse(text) as { v: number }).v;
            resolve();
          });
        });
        req.on('error', (err) => {
          failures.push(err.message);
          resolve();
        });
        req.end();
      });
    const clients = Array.from({ length: 20 }, async () => {
      while (running) await once();
    });
    try {
      for (let version = 1; version <= 40; version++) {
        writeFileSync(join(sandbox.controllers, 'lib', 'version.ts'), `export const version = ${version};\n`);
        await new Promise((r) => setTimeout(r, 40)); // part of the scenario: a save every 40 ms
      }
      await eventually(() => (last === 40 ? true : undefined), 5000, 'the last version served');
    } finally {
      running = false;
      await Promise.all(clients);
      agent.destroy();
    }
    // The load ran across the saves (a request per save at least), however busy the machine: under load average
    // 15, 20 clients got 88 answers in all, so a count tied to the machine's speed would fail there.
    expect(answered, 'answers during the saves').to.be.at.least(40);
    expect(failures).to.deep.equal([]);
  });
});
