// Processes killed under load: the host pool, one host worker, the proxy. Requests in flight
// get an answer (500/503) or a refused connection, never a hang; the launcher (or the pool) brings the
// process back; within 2 s of its new ready line every request succeeds again.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** No request may take longer than this, whatever is being killed. */
const ANSWER_WITHIN_MS = 5_000;
const RECOVERED_WITHIN_MS = 2_000;
const LOOPS = 4;

interface Outcome {
  startedAt: number;
  endedAt: number;
  result: number | string;
}

/** LOOPS clients sending one request after another until stop() (each loop bounded in count too). */
function loadLoops(url: string) {
  const outcomes: Outcome[] = [];
  let running = true;
  const loops = Array.from({ length: LOOPS }, async () => {
    for (let i = 0; running && i < 5_000; i++) {
      const startedAt = Date.now();
      const result = await Promise.race([
        get(url, '/External/Ping').then(
          (reply) => (reply.status === 200 && reply.body !== 'pong' ? `200 with ${reply.body}` : reply.status),
          (err: NodeJS.ErrnoException) => err.code ?? err.message,
        ),
        new Promise<string>((resolve) => setTimeout(() => resolve('hang'), ANSWER_WITHIN_MS).unref()),
      ]);
      outcomes.push({ startedAt, endedAt: Date.now(), result });
    }
  });
  return {
    outcomes,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** The time a host.log line was written, from its own timestamp (`[22-Nov-2026 04:49:34.125 UTC]`). */
function hostLogTime(line: string): number {
  const [, day, month, year, time] = /^\[(\d+)-(\w+)-(\d+) ([\d:.]+) UTC\]/.exec(line)!;
  return Date.parse(`${day} ${month} ${year} ${time} UTC`);
}

function summarize(name: string, outcomes: Outcome[], readyAt: number): { failures: Outcome[]; windowMs: number } {
  const failures = outcomes.filter((o) => o.result !== 200);
  const windowMs = failures.length ? Math.max(...failures.map((o) => o.endedAt)) - Math.min(...failures.map((o) => o.startedAt)) : 0;
  const kinds = failures.reduce<Record<string, number>>((acc, o) => ((acc[String(o.result)] = (acc[String(o.result)] ?? 0) + 1), acc), {});
  const lastFailureAfterReady = failures.length ? Math.max(...failures.map((o) => o.endedAt)) - readyAt : 0;
  process.stdout.write(
    `      ${name}: ${outcomes.length} requests, ${failures.length} failed ${JSON.stringify(kinds)}, failure window ${windowMs} ms, last failure ${lastFailureAfterReady} ms after the new ready line\n`,
  );
  return { failures, windowMs };
}

function expectRecovered(outcomes: Outcome[], readyAt: number, allowed: (number | string)[]): void {
  expect(outcomes.filter((o) => o.result === 'hang')).to.deep.equal([]);
  expect(outcomes.filter((o) => o.result !== 200 && !allowed.includes(o.result))).to.deep.equal([]);
  const late = outcomes.filter((o) => o.startedAt > readyAt + RECOVERED_WITHIN_MS);
  expect(late.length).to.be.greaterThan(0);
  expect(late.filter((o) => o.result !== 200)).to.deep.equal([]);
}

describe('processes killed under load', function () {
  this.timeout(30_000);
  let sandbox: Sandbox;
  let stack: Running;

  async function start(args: string[]): Promise<void> {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Ping.ts'), `export default () => 'pong';\n`);
    stack = await startStack(sandbox, args);
    expect((await get(stack.url, '/External/Ping')).body).to.equal('pong');
  }

  afterEach(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  const linesMatching = (file: 'host.log' | 'error.log', pattern: RegExp) => readLog(sandbox, file).filter((l) => pattern.test(l));

  it('host pool killed with SIGKILL: answers 500/503 meanwhile, restarted, all 200 within 2 s of its ready line', async function () {
    await start(['--workers', '2']);
    const [poolLine] = linesMatching('host.log', /Host pool \d+ serving/);
    const pid = Number(/Host pool (\d+)/.exec(poolLine)![1]);
    const load = loadLoops(stack.url);
    await eventually(() => (load.outcomes.length >= 20 ? true : undefined), 5000, 'load to run');
    process.kill(pid, 'SIGKILL');
    const readyLine = await eventually(
      () => linesMatching('host.log', /Host pool \d+ serving/).find((l) => !l.includes(`pool ${pid} `)),
      10_000,
      'the new pool',
    );
    const readyAt = hostLogTime(readyLine);
    await eventually(() => (Date.now() > readyAt + RECOVERED_WITHIN_MS + 1000 ? true : undefined), 10_000, 'time after the restart');
    await load.stop();
    summarize('host pool SIGKILL', load.outcomes, readyAt);
    expectRecovered(load.outcomes, readyAt, [500, 503]);
    expect(stack.stderr()).to.match(new RegExp(`host \\(pid ${pid}\\) exited with signal SIGKILL`));
  });

  it('one of two host workers killed: the other serves, the pool replaces it, all 200 within 2 s of its ready line', async function () {
    await start(['--workers', '2']);
    const [workerLine] = linesMatching('host.log', /Worker \d+ ready/);
    const pid = Number(/Worker (\d+)/.exec(workerLine)![1]);
    const load = loadLoops(stack.url);
    await eventually(() => (load.outcomes.length >= 20 ? true : undefined), 5000, 'load to run');
    process.kill(pid, 'SIGKILL');
    await eventually(
      () => (linesMatching('host.log', /Worker \d+ ready/).length === 3 ? true : undefined),
      10_000,
      'the replacement worker',
    );
    const readyAt = hostLogTime(linesMatching('host.log', /Worker \d+ ready/)[2]);
    await eventually(() => (Date.now() > readyAt + RECOVERED_WITHIN_MS + 1000 ? true : undefined), 10_000, 'time after the replacement');
    await load.stop();
    summarize('one of two workers SIGKILL', load.outcomes, readyAt);
    expectRecovered(load.outcomes, readyAt, [500, 503]);
  });

  it('the only host worker killed: 503 until the replacement listens, then all 200', async function () {
    await start(['--workers', '1']);
    const [workerLine] = linesMatching('host.log', /Worker \d+ ready/);
    const pid = Number(/Worker (\d+)/.exec(workerLine)![1]);
    const load = loadLoops(stack.url);
    await eventually(() => (load.outcomes.length >= 20 ? true : undefined), 5000, 'load to run');
    process.kill(pid, 'SIGKILL');
    await eventually(
      () => (linesMatching('host.log', /Worker \d+ ready/).length === 2 ? true : undefined),
      10_000,
      'the replacement worker',
    );
    const readyAt = hostLogTime(linesMatching('host.log', /Worker \d+ ready/)[1]);
    await eventually(() => (Date.now() > readyAt + RECOVERED_WITHIN_MS + 1000 ? true : undefined), 10_000, 'time after the replacement');
    await load.stop();
    summarize('the only worker SIGKILL', load.outcomes, readyAt);
    expectRecovered(load.outcomes, readyAt, [500, 503]);
  });

  it('proxy killed with SIGKILL: connections refused meanwhile, restarted on the same port, all 200 within 2 s', async function () {
    await start(['--workers', '2']);
    const [proxyLine] = linesMatching('error.log', /extqs proxy \d+ configured/);
    const pid = Number(/extqs proxy (\d+)/.exec(proxyLine)![1]);
    const load = loadLoops(stack.url);
    await eventually(() => (load.outcomes.length >= 20 ? true : undefined), 5000, 'load to run');
    process.kill(pid, 'SIGKILL');
    // The launcher prints the ready line again, with the same URL; it is seen here as it arrives.
    await eventually(
      () =>
        stack
          .stdout()
          .split('\n')
          .filter((l) => l === `listening on ${stack.url}`).length === 2
          ? true
          : undefined,
      10_000,
      'the proxy ready again',
    );
    const readyAt = Date.now();
    await eventually(() => (Date.now() > readyAt + RECOVERED_WITHIN_MS + 1000 ? true : undefined), 10_000, 'time after the restart');
    await load.stop();
    summarize('proxy SIGKILL', load.outcomes, readyAt);
    // In flight when it died: reset; while it was down: refused.
    expectRecovered(load.outcomes, readyAt, ['ECONNRESET', 'ECONNREFUSED']);
  });

  it('proxy killed while another process holds its port: says why on stderr, keeps trying, comes back when the port is free', async function () {
    await start(['--workers', '1']);
    const [proxyLine] = linesMatching('error.log', /extqs proxy \d+ configured/);
    const pid = Number(/extqs proxy (\d+)/.exec(proxyLine)![1]);
    const port = Number(new URL(stack.url).port);
    process.kill(pid, 'SIGKILL');
    // Take the port in the launcher's 100 ms restart delay (the kernel frees it when the proxy dies).
    const squatter: Server = await eventually(
      () =>
        new Promise<Server | undefined>((resolve) => {
          const server = createServer((socket) => socket.destroy());
          server.once('error', () => resolve(undefined));
          server.listen(port, '127.0.0.1', () => resolve(server));
        }),
      2000,
      'the port free to take',
    );
    try {
      await eventually(
        () => (stack.stderr().includes('proxy restart failed: proxy exited with code 1 before it was ready') ? true : undefined),
        10_000,
        'the failed restart on stderr',
      );
      expect(stack.stderr()).to.match(
        /extqs proxy: cannot listen: (listen EADDRINUSE: address already in use|bind EADDRINUSE) 127\.0\.0\.1:\d+/,
      );
      expect(stack.child.exitCode).to.equal(null);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
    // Back-off doubles up to 5 s between attempts.
    await eventually(
      async () => ((await get(stack.url, '/External/Ping').catch(() => undefined))?.body === 'pong' ? true : undefined),
      12_000,
      'the proxy back on its port',
    );
  });
});
