// A controller's failure that its own code did not catch costs only its own request, as a PHP script's did
// (docs/design.md §6.2): loops of the faulty controller beside ordinary GETs on the default two workers, every
// neighbour's answer checked byte for byte, and the workers' fate read from host.log.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { get, type Reply } from '../helpers/http.ts';
import { total } from '../helpers/metrics.ts';
import { NOT_STARTED_FIELD } from '../../common/protocol.ts';
import {
  descendants,
  eventually,
  makeSandbox,
  readHostEvents,
  readLog,
  roleOf,
  startStack,
  type Running,
  type Sandbox,
} from '../helpers/stack.ts';

const ROUNDS = 6;
const NEIGHBOURS = 6;

/** A neighbour's answer: long enough to span several chunks, different for each request. */
const neighbourBody = (n: number) => `neighbour ${n} ${'x'.repeat(20_000)}`;

describe('a controller whose own code fails (--workers 2)', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let stack: Running;
  const write = (name: string, lines: string[]) => writeFileSync(join(sandbox.controllers, `${name}.ts`), `${lines.join('\n')}\n`);
  const sleep = 'const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));';

  before(async function () {
    sandbox = makeSandbox();
    // It awaits, so it is in flight on a worker when a faulty request on the same worker fails.
    write('Neighbour', [
      sleep,
      'export default async ({ query }: { query: Record<string, string> }) => {',
      '  await sleep(40);',
      "  return `neighbour ${query.n} ${'x'.repeat(20_000)}`;",
      '};',
    ]);
    stack = await startStack(sandbox, ['--workers', '2', '--status-allow', '127.0.0.1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  /**
   * ROUNDS rounds of the faulty request beside NEIGHBOURS neighbour GETs sent at the same time; returns the faulty
   * answers, after checking every neighbour's answer.
   */
  async function besideNeighbours(path: (round: number) => string): Promise<Reply[]> {
    const faulty: Reply[] = [];
    let n = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const neighbours = Array.from({ length: NEIGHBOURS }, () => {
        const mine = n++;
        return get(stack.url, `/External/Neighbour?n=${mine}`, { timeoutMs: 20_000 }).then(
          (reply) => ({ mine, reply }),
          (err: Error) => ({ mine, reply: { status: 0, headers: {}, body: err.message } }),
        );
      });
      faulty.push(await get(stack.url, path(round), { timeoutMs: 20_000 }));
      for (const { mine, reply } of await Promise.all(neighbours)) {
        expect({ n: mine, status: reply.status, same: reply.body === neighbourBody(mine) }).to.deep.equal({
          n: mine,
          status: 200,
          same: true,
        });
      }
    }
    return faulty;
  }

  /** The host.log event of request `id` that includes `text`. */
  const eventOf = (id: string, text: string) =>
    eventually(
      () => readHostEvents(sandbox).find((e) => e.includes(`[req ${id}]`) && e.includes(text)),
      5000,
      `the line "${text}" of request ${id}`,
    );

  /** Lines of workers that exited unasked, after a last request's own line is in host.log (so none is still on its way). */
  async function workerExits(): Promise<string[]> {
    const marker = await get(stack.url, '/External/Missing');
    await eventOf(marker.headers['x-request-id'] as string, 'Failed opening controller script');
    return readLog(sandbox, 'host.log').filter((line) => /Worker \d+ exited/.test(line));
  }

  const errorsOf = async (controller: string) =>
    total((await get(stack.url, '/metrics')).body, 'extqs_host_controller_errors_total', { controller }) ?? 0;

  describe('when it forgets a rejected promise', function () {
    it('keeps its answer, logs the rejection with its request and stack, counts an error, and no neighbour fails nor worker exits', async function () {
      write('Forgot', ['export default () => {', "  Promise.reject(new Error('forgotten'));", "  return 'ok';", '};']);
      const answers = await besideNeighbours((round) => `/External/Forgot?round=${round}`);
      expect(answers.map((a) => [a.status, a.body])).to.deep.equal(Array(ROUNDS).fill([200, 'ok']));
      const id = answers[0].headers['x-request-id'] as string;
      const event = await eventOf(id, 'Unhandled rejection');
      expect(event, event).to.match(
        new RegExp(
          `\\[error\\] \\[req ${id}\\] Unhandled rejection in controller Forgot \\(${sandbox.controllers}/Forgot\\.ts\\) in GET /External/Forgot\\?round=0, after its answer was given \\(it stands\\): Error: forgotten\\n\\s+at `,
        ),
      );
      expect(event).to.contain(`${sandbox.controllers}/Forgot.ts:2:`);
      await eventually(async () => ((await errorsOf('Forgot')) === ROUNDS ? true : undefined), 5000, `${ROUNDS} errors of Forgot`);
      expect(await workerExits()).to.deep.equal([]);
    });

    it('answers 500 with the fatal line when its request still awaits its answer', async function () {
      write('ForgotEarly', [
        sleep,
        'export default async () => {',
        "  Promise.reject(new Error('forgotten early'));",
        '  await sleep(200);',
        "  return 'late';",
        '};',
      ]);
      const reply = await get(stack.url, '/External/ForgotEarly');
      expect(reply.status).to.equal(500);
      const id = reply.headers['x-request-id'] as string;
      expect(await eventOf(id, 'Unhandled rejection')).to.match(
        /\[error\] \[req .*\] Unhandled rejection in controller .*ForgotEarly\.ts \(version \w+\) in GET \/External\/ForgotEarly: Error: forgotten early\n/,
      );
      const fatal = await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.endsWith(`request_id: ${id}`)),
        5000,
        'its error.log line',
      );
      expect(fatal).to.match(/PHP Fatal error: {2}Unhandled rejection in controller .*ForgotEarly\.ts/);
      expect(await workerExits()).to.deep.equal([]);
    });
  });

  describe('when a callback of it throws', function () {
    it('answers its own request 500 and retires its worker, and no neighbour fails', async function () {
      write('Crash', [
        sleep,
        'export default async () => {',
        "  setTimeout(() => { throw new Error('boom in a timer'); }, 0);",
        '  await sleep(500);',
        "  return 'never';",
        '};',
      ]);
      const answers = await besideNeighbours((round) => `/External/Crash?round=${round}`);
      expect(answers.map((a) => a.status)).to.deep.equal(Array(ROUNDS).fill(500));
      const id = answers[0].headers['x-request-id'] as string;
      const event = await eventOf(id, 'Uncaught exception');
      expect(event, event).to.match(
        /Uncaught exception in controller .*Crash\.ts \(version \w+\) in GET \/External\/Crash\?round=0: Error: boom in a timer\n/,
      );
      expect(event).to.contain(`${sandbox.controllers}/Crash.ts:3:`);
      // Its worker was replaced as a recycled one is, after finishing what it ran: none exited unasked.
      await eventually(
        () =>
          readLog(sandbox, 'host.log').find(
            (l) => l.includes(`Recycling worker`) && l.includes(`(an uncaught exception in controller Crash, request ${id})`),
          ),
        5000,
        'the recycling line',
      );
      expect(await workerExits()).to.deep.equal([]);
    });

    it('sends its worker no new request from then on', async function () {
      // The crash names its worker in its own answer's stead: the file, written before the timer throws.
      const pidFile = join(sandbox.dir, 'crashed.pid');
      write('CrashAndTell', [
        "import { writeFileSync } from 'node:fs';",
        'export default async () => {',
        `  writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));`,
        "  setTimeout(() => { throw new Error('boom'); }, 0);",
        '  await new Promise((resolve) => setTimeout(resolve, 500));',
        '};',
      ]);
      write('Pid', ['export default () => String(process.pid);']);
      // Both workers have Pid loaded, so neither is slower to answer it.
      for (let i = 0; i < 4; i++) await get(stack.url, '/External/Pid');
      expect((await get(stack.url, '/External/CrashAndTell')).status).to.equal(500);
      const crashed = readFileSync(pidFile, 'utf8');
      // At once and all together: some reach it before the proxy reads that it retires, and go elsewhere unstarted.
      const answers = await Promise.all(Array.from({ length: 10 }, () => get(stack.url, '/External/Pid')));
      expect(answers.map((a) => a.status)).to.deep.equal(Array(10).fill(200));
      expect(answers.map((a) => a.body)).not.to.include(crashed);
    });

    it('starts nothing that still reaches it after the crash: the request goes elsewhere, unstarted', async function () {
      const pidFile = join(sandbox.dir, 'crashed-direct.pid');
      write('CrashAndStay', [
        "import { writeFileSync } from 'node:fs';",
        'export default async () => {',
        `  writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));`,
        "  setTimeout(() => { throw new Error('boom'); }, 0);",
        // Still running: the worker lives on until it ends, as a retiring worker finishes what it runs.
        '  await new Promise((resolve) => setTimeout(resolve, 3000));',
        '};',
      ]);
      write('Pid', ['export default () => String(process.pid);']);
      expect((await get(stack.url, '/External/CrashAndStay')).status).to.equal(500);
      const crashed = Number(readFileSync(pidFile, 'utf8'));
      // Straight to each worker's own socket, as a proxy that has not yet read the table would send it.
      const hostPid = descendants(stack.child.pid!).find((pid) => roleOf(pid) === 'host')!;
      const dir = readdirSync(tmpdir()).find((name) => name.startsWith(`extqs-host-${hostPid}-`))!;
      const sockets = readdirSync(join(tmpdir(), dir)).filter((file) => /^w\d+\.sock$/.test(file));
      const replies = await Promise.all(
        sockets.map((file, i) =>
          get('http://localhost', '/External/Pid', { socketPath: join(tmpdir(), dir, file), headers: { 'x-request-id': `direct-${i}` } })
            .then((reply) => ({ ...reply, id: `direct-${i}` }))
            .catch(() => undefined),
        ),
      );
      // Every worker alive answers (an earlier test's crashed worker, still finishing, may refuse too); none runs it
      // on the crashed one, which still runs its call and so still listens.
      expect(replies.filter((reply) => reply === undefined)).to.deep.equal([]);
      const refused = replies.filter((reply) => reply?.status === 503);
      expect(refused, 'the crashed worker refused it').to.not.deep.equal([]);
      for (const reply of refused) expect(reply!.headers).to.have.property(NOT_STARTED_FIELD, '1');
      expect(replies.map((reply) => reply?.body)).not.to.include(String(crashed));
      await eventOf(refused[0]!.id, 'Did not start GET /External/Pid: its worker had an uncaught exception and retires');
    });

    it("answers 500 and retires its worker even under a controller's own capture callback", async function () {
      write('Captures', [
        sleep,
        'process.setUncaughtExceptionCaptureCallback((error) => console.log(`captured ${error.message}`));',
        'export default async () => {',
        "  setTimeout(() => { throw new Error('thrown under a capture'); }, 0);",
        '  await sleep(500);',
        "  return 'never';",
        '};',
      ]);
      const reply = await get(stack.url, '/External/Captures');
      expect(reply.status).to.equal(500);
      const id = reply.headers['x-request-id'] as string;
      await eventOf(id, 'Uncaught exception in controller');
      await eventually(
        () => readLog(sandbox, 'host.log').find((l) => l.includes(`(an uncaught exception in controller Captures, request ${id})`)),
        5000,
        'the recycling line',
      );
      // The controller's callback ran too, after the host's handling.
      await eventOf(id, 'captured thrown under a capture');
    });

    it('blames a timer started when the controller loaded on no request', async function () {
      write('LoadTimer', [
        "setTimeout(() => { throw new Error('thrown by a timer of the load'); }, 50);",
        "export default () => 'loaded';",
      ]);
      const reply = await get(stack.url, '/External/LoadTimer');
      expect([reply.status, reply.body]).to.deep.equal([200, 'loaded']);
      const event = await eventually(
        () => readHostEvents(sandbox).find((e) => e.includes('thrown by a timer of the load')),
        5000,
        'the uncaught exception line',
      );
      expect(event, event).to.match(
        /\[error\] \[req -\] Uncaught exception outside any controller request in worker \d+: Error: thrown by a timer of the load/,
      );
      expect(await workerExits()).to.deep.equal([]);
    });
  });

  describe('when it calls process.exit()', function () {
    it('answers that request 200 with an empty body, logs an info line, and no neighbour fails nor worker exits', async function () {
      write('Exit', ['export default () => {', '  process.exit(0);', '};']);
      const answers = await besideNeighbours((round) => `/External/Exit?round=${round}`);
      expect(answers.map((a) => [a.status, a.headers['content-length'], a.body])).to.deep.equal(Array(ROUNDS).fill([200, '0', '']));
      const id = answers[0].headers['x-request-id'] as string;
      expect(await eventOf(id, 'process.exit')).to.match(
        new RegExp(
          `\\[info\\] \\[req ${id}\\] Controller Exit \\(${sandbox.controllers}/Exit\\.ts\\) process\\.exit\\(0\\) called in GET /External/Exit\\?round=0: its request ends there, answered 200$`,
        ),
      );
      expect(await workerExits()).to.deep.equal([]);
    });

    it('ends the request the same way after an await, or from a timer while the request awaits', async function () {
      write('ExitLater', [
        sleep,
        'export default async ({ query }: { query: Record<string, string> }) => {',
        "  if (query.in === 'timer') setTimeout(() => process.exit(3), 0);",
        '  else { await sleep(10); process.exit(3); }',
        '  await sleep(500);',
        "  return 'never';",
        '};',
      ]);
      for (const where of ['await', 'timer']) {
        const reply = await get(stack.url, `/External/ExitLater?in=${where}`);
        expect([reply.status, reply.headers['content-length'], reply.body], where).to.deep.equal([200, '0', '']);
      }
      expect(await workerExits()).to.deep.equal([]);
    });

    it('ends a streamed body already going where it is, cleanly, with the info line alone', async function () {
      write('ExitStream', [
        "const chunk = new TextEncoder().encode('y'.repeat(8192));",
        'export default () => {',
        '  let pulls = 0;',
        '  return new Response(',
        '    new ReadableStream({',
        '      pull(controller) {',
        '        pulls += 1;',
        '        if (pulls > 3) process.exit(0);',
        '        controller.enqueue(chunk);',
        '      },',
        '    }),',
        '  );',
        '};',
      ]);
      const reply = await get(stack.url, '/External/ExitStream');
      expect([reply.status, reply.body.length, reply.body === 'y'.repeat(3 * 8192)]).to.deep.equal([200, 3 * 8192, true]);
      const id = reply.headers['x-request-id'] as string;
      expect(await eventOf(id, 'process.exit')).to.match(
        /\[info\] \[req .*\] Controller ExitStream \(.*\) process\.exit\(0\) called in GET \/External\/ExitStream after its handler returned: its answer ends where it is$/,
      );
      expect(await workerExits()).to.deep.equal([]);
      expect(readHostEvents(sandbox).filter((e) => e.includes(`[req ${id}]`))).to.have.length(1);
      expect(readLog(sandbox, 'error.log').filter((l) => l.endsWith(`request_id: ${id}`))).to.deep.equal([]);
    });

    it('is a load failure when called as the controller loads', async function () {
      write('ExitAtLoad', ['process.exit(1);', "export default () => 'never';"]);
      const reply = await get(stack.url, '/External/ExitAtLoad');
      expect(reply.status).to.equal(500);
      expect(await eventOf(reply.headers['x-request-id'] as string, 'threw while loading')).to.contain(
        'ControllerExit: process.exit(1) called',
      );
      expect(await workerExits()).to.deep.equal([]);
    });
  });
});
