// `extqs dev`, the service on a developer's machine: one proxy and one host worker, every log line also on
// the terminal in colour with a code frame under a controller's failure, and a controller's uncaught error
// shown with its stack to a loopback client; `extqs start` never shows it (docs/design.md §7).
import { mkdirSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { descendants, eventually, makeSandbox, readLog, spawnReady, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const ESC = '\u001b';

/** Throws on line 4, column 16; the message holds markup, which the page must show, not run. */
const THROWING = [
  'const x = 1;',
  '',
  'export default () => {',
  "  if (x) throw new Error('boom <b>');",
  "  return 'never';",
  '};',
  '',
].join('\n');

function startDev(sandbox: Sandbox, env: NodeJS.ProcessEnv = {}, args: string[] = ['--listen', '127.0.0.1']): Promise<Running> {
  return spawnReady(['bin/extqs.js', 'dev', '--port', '0', '--www', sandbox.www, '--logs', sandbox.logs, ...args], env);
}

describe('extqs dev', function () {
  let sandbox: Sandbox;
  let running: Running | undefined;

  beforeEach(() => (sandbox = makeSandbox()));
  afterEach(async function () {
    await running?.stop();
    running = undefined;
    sandbox.remove();
  });

  describe('when a controller throws', function () {
    beforeEach(async function () {
      writeFileSync(join(sandbox.controllers, 'Boom.ts'), THROWING);
      writeFileSync(join(sandbox.controllers, 'Chatty.ts'), "export default () => { console.log('said', 42); return 'ok'; };\n");
      running = await startDev(sandbox, { FORCE_COLOR: '1' });
    });

    it('runs one proxy process and one host worker', function () {
      // The host primary, its one worker, the proxy: no proxy workers. (esbuild's service, started by a
      // worker's first compile, is no extqs process.)
      // By the executable: Node 24 names its main thread MainThread, so /proc/PID/comm no longer says node.
      const node = realpathSync(process.execPath);
      const nodes = descendants(running!.child.pid!).filter((pid) => readlinkSync(`/proc/${pid}/exe`) === node);
      expect(nodes).to.have.length(3);
    });

    it('shows a loopback client the message and the stack mapped to the .ts file, HTML-escaped', async function () {
      const reply = await get(running!.url, '/External/Boom');
      expect(reply.status).to.equal(500);
      expect(reply.headers['content-type']).to.equal('text/html; charset=utf-8');
      expect(reply.body).to.contain('Error: boom &lt;b&gt;');
      expect(reply.body).not.to.contain('<b>');
      expect(reply.body).to.contain(`${join(sandbox.controllers, 'Boom.ts')}:4:16`);
      expect(reply.body).to.contain('&gt; 4 |   if (x) throw new Error(&#39;boom &lt;b&gt;&#39;);');
    });

    it('shows a rejection no code of the controller handled as that rejection, with its stack', async function () {
      writeFileSync(
        join(sandbox.controllers, 'Forgets.ts'),
        "export default async () => {\n  Promise.reject(new Error('forgotten'));\n  await new Promise((resolve) => setTimeout(resolve, 200));\n};\n",
      );
      const reply = await get(running!.url, '/External/Forgets');
      expect(reply.status).to.equal(500);
      expect(reply.body).to.contain('<h1>Unhandled rejection in controller Forgets</h1>');
      expect(reply.body).to.contain('<p><strong>Error: forgotten</strong></p>');
      expect(reply.body).to.contain(`at Object.Forgets_default [as handler] (${join(sandbox.controllers, 'Forgets.ts')}:2:18)`);
    });

    it('writes every log line on stderr in colour, with the code frame under the failure', async function () {
      const reply = await get(running!.url, '/External/Boom');
      const id = reply.headers['x-request-id'] as string;
      const said = await get(running!.url, '/External/Chatty');
      const saidId = said.headers['x-request-id'] as string;
      // The proxy's own lines too: its 404 for the favicon, written after the relays of Boom's failure.
      await get(running!.url, '/favicon.ico');
      const stderr = await eventually(
        () => (running!.stderr().includes('said 42') && running!.stderr().includes('AH00128') ? running!.stderr() : undefined),
        5000,
        'the lines on stderr',
      );
      // Level in red, the request id in magenta, then the message.
      expect(stderr).to.contain(
        `${ESC}[31merror ${ESC}[0m ${ESC}[1mhost${ESC}[0m ${ESC}[35m[req ${id}]${ESC}[0m Uncaught exception in controller`,
      );
      expect(stderr).to.contain(`${ESC}[31m> 4 |${ESC}[0m   if (x) throw new Error('boom <b>');`);
      // A console line: the controller's name in cyan after the request id.
      expect(stderr).to.contain(`${ESC}[35m[req ${saidId}]${ESC}[0m ${ESC}[36m[Chatty]${ESC}[0m said 42`);
      expect(stderr).to.match(/core.* AH00128: File does not exist: .*favicon\.ico/);
    });

    it("shows the failure once: error.log's relays of the host's line stay out of the terminal", async function () {
      const reply = await get(running!.url, '/External/Boom');
      const id = reply.headers['x-request-id'] as string;
      // A marker after them from each process: the proxy's 404 line, and the host's console line.
      await get(running!.url, '/favicon.ico');
      await get(running!.url, '/External/Chatty');
      const stderr = await eventually(
        () => (running!.stderr().includes('said 42') && running!.stderr().includes('AH00128') ? running!.stderr() : undefined),
        5000,
        'the markers on stderr',
      );
      expect(stderr.split('\n').filter((line) => line.includes(id))).to.have.length(1);
      expect(stderr).not.to.contain('mod_fcgid: stderr');
      // error.log keeps Apache's lines, as in `extqs start`.
      const relayed = await eventually(
        () => readLog(sandbox, 'error.log').find((line) => line.includes(id) && line.includes('mod_fcgid: stderr: PHP Fatal error')),
        3000,
        "error.log's relay of the failure",
      );
      expect(relayed).to.contain('Uncaught exception in controller');
    });
  });

  describe('when a controller cannot be loaded', function () {
    beforeEach(async function () {
      writeFileSync(
        join(sandbox.controllers, 'TopThrow.ts'),
        "const ready = false;\nif (!ready) throw new Error('not <ready>');\nexport default () => 'x';\n",
      );
      writeFileSync(join(sandbox.controllers, 'NoDefault.ts'), "export const answer = () => 'x';\n");
      writeFileSync(join(sandbox.controllers, 'Broken.ts'), 'export default () => {\n  return {;\n};\n');
      running = await startDev(sandbox);
    });

    it('shows a loopback client the page for each way a load fails, with its source lines', async function () {
      const pages = {
        TopThrow: [
          'threw while loading: Error: not &lt;ready&gt;',
          `${join(sandbox.controllers, 'TopThrow.ts')}:2:19`,
          '&gt; 2 | if (!ready)',
        ],
        NoDefault: [`Controller script ${join(sandbox.controllers, 'NoDefault.ts')} has no default export function`],
        Broken: [`${join(sandbox.controllers, 'Broken.ts')}:2:11: Expected identifier but found`, '&gt; 2 |   return {;'],
      };
      for (const [name, parts] of Object.entries(pages)) {
        const reply = await get(running!.url, `/External/${name}`);
        expect(reply.status, name).to.equal(500);
        expect(reply.headers['content-type'], name).to.equal('text/html; charset=utf-8');
        expect(reply.body, name).to.contain(`<h1>Controller ${name} could not be loaded</h1>`);
        for (const part of parts) expect(reply.body, name).to.contain(part);
      }
    });

    it("keeps PHP's fatal error in error.log, and shows the failure once on the terminal", async function () {
      const reply = await get(running!.url, '/External/TopThrow');
      const id = reply.headers['x-request-id'] as string;
      const relayed = await eventually(
        () => readLog(sandbox, 'error.log').find((line) => line.includes(id) && line.includes('mod_fcgid: stderr: PHP Fatal error')),
        3000,
        "error.log's relay of the failure",
      );
      expect(relayed).to.contain('threw while loading');
      const stderr = await eventually(() => (running!.stderr().includes(id) ? running!.stderr() : undefined), 3000, 'the host line');
      expect(stderr.split('\n').filter((line) => line.includes(id))).to.have.length(1);
    });
  });

  describe('when a controller has a type error', function () {
    /** `query.n` is a string: the type error is why the call throws. */
    const TYPO = [
      "import type { Controller } from 'extqs';",
      '',
      'const Typo: Controller = ({ query }) => {',
      '  const count: number = query.n;',
      '  return { count: count.toFixed(1) };',
      '};',
      'export default Typo;',
      '',
    ].join('\n');
    const FIXED = TYPO.replace('= query.n;', "= Number(query.n);\n  if (Number.isNaN(count)) throw new Error('n is no number');");
    const TYPE_ERROR = "Typo.ts:4:9 Type 'QueryValue' is not assignable to type 'number'.";
    const linesWith = (text: string) =>
      running!
        .stderr()
        .split('\n')
        .filter((line) => line.includes(text));
    const stderrWith = (text: string, what: string) =>
      eventually(() => (running!.stderr().includes(text) ? running!.stderr() : undefined), 30_000, what);

    beforeEach(async function () {
      writeFileSync(join(sandbox.controllers, 'Typo.ts'), TYPO);
      mkdirSync(join(sandbox.controllers, 'lib'));
      running = await startDev(sandbox, { NO_COLOR: '1', FORCE_COLOR: undefined });
    });

    it('prints it once with its code frame, shows it on the page, and clears both when fixed', async function () {
      this.timeout(90_000);
      const first = await stderrWith('1 type error (TypeScript', 'the first check');
      expect(first).to.contain(`${join(sandbox.controllers, TYPE_ERROR)}\n`);
      expect(first).to.match(/> 4 \| {3}const count: number = query\.n;\n {4}\| {9}\^/);

      // Served all the same: the check never stops a controller; the page of its failure lists it.
      const page = await get(running!.url, '/External/Typo?n=5');
      expect(page.status).to.equal(500);
      expect(page.body).to.contain('<h2>1 type error in its files</h2>');
      expect(page.body).to.contain(`${join(sandbox.controllers, 'Typo.ts')}:4:9 Type &#39;QueryValue&#39; is not assignable`);
      expect(page.body).to.contain('&gt; 4 |   const count: number = query.n;');

      // A save elsewhere is checked too, and what stands is not printed again.
      writeFileSync(join(sandbox.controllers, 'lib', 'limits.ts'), "export const most: number = 'ten';\n");
      await stderrWith("limits.ts:1:14 Type 'string' is not assignable to type 'number'.", "the helper's error");
      expect(linesWith(TYPE_ERROR)).to.have.length(1);

      writeFileSync(join(sandbox.controllers, 'Typo.ts'), FIXED);
      writeFileSync(join(sandbox.controllers, 'lib', 'limits.ts'), 'export const most: number = 10;\n');
      await stderrWith('fixed, no type error left', 'the fix');
      const answer = await eventually(async () => {
        const reply = await get(running!.url, '/External/Typo?n=5');
        return reply.status === 200 ? reply : undefined;
      }, 5000);
      expect(answer.body).to.equal('{"count":"5.0"}');
      const fixedPage = await get(running!.url, '/External/Typo');
      expect(fixedPage.body).to.contain('n is no number');
      expect(fixedPage.body).not.to.contain('type error');
      expect(linesWith(TYPE_ERROR)).to.have.length(1);
    });
  });

  it('shows the page through the http-proxy engine too, to a client on ::1', async function () {
    writeFileSync(join(sandbox.controllers, 'Boom.ts'), THROWING);
    running = await startDev(sandbox, {}, ['--listen', '::1', '--forwarder', 'http-proxy']);
    expect(running.url).to.match(/^http:\/\/\[::1\]:/);
    const reply = await get(running.url, '/External/Boom');
    expect(reply.status).to.equal(500);
    expect(reply.body).to.contain('Error: boom &lt;b&gt;');
    expect(reply.body).to.contain(`${join(sandbox.controllers, 'Boom.ts')}:4:16`);
  });

  it('writes no colour with NO_COLOR, and a compile error with its code frame', async function () {
    writeFileSync(join(sandbox.controllers, 'Broken.ts'), 'export default () => {\n  return {;\n};\n');
    running = await startDev(sandbox, { NO_COLOR: '1', FORCE_COLOR: undefined });
    await get(running.url, '/External/Broken');
    const stderr = await eventually(() => (running!.stderr().includes('> 2 |') ? running!.stderr() : undefined), 5000, 'the code frame');
    expect(stderr).not.to.contain(ESC);
    expect(stderr).to.contain('Parse error in controller script');
    expect(stderr).to.match(/> 2 \| {3}return \{;\n {4}\| {11}\^/);
  });
});

describe('extqs start, with the same failing controllers', function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Boom.ts'), THROWING);
    writeFileSync(join(sandbox.controllers, 'TopThrow.ts'), "throw new Error('boom at load');\nexport default () => 'x';\n");
    stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1']);
  });
  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('answers a loopback client the usual 500 page, without the error, whatever it claims', async function () {
    const claims: Record<string, string>[] = [{}, { 'X-Extqs-Local-Client': '1', 'X-Forwarded-For': '127.0.0.1' }];
    for (const headers of claims) {
      for (const name of ['Boom', 'TopThrow']) {
        const reply = await get(stack.url, `/External/${name}`, { headers });
        expect(reply.status).to.equal(500);
        expect(reply.body).to.contain('<title>500 Internal Server Error</title>');
        expect(reply.body).not.to.contain('boom');
      }
    }
    expect(stack.stderr()).not.to.contain('boom');
  });
});
