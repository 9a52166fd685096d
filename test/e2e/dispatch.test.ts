// Request-level dispatch in the host: a request never waits behind a stuck worker while another can take it;
// at --worker-concurrency 1 (php-fpm's model, one request a worker), when every worker is busy it waits in one
// FIFO queue bounded by --listen-backlog (past it: 503 and mod_fcgid's line); a stuck worker's kill fails only
// its own request. And the process manager modes (--pm static|dynamic|ondemand). Real processes through the
// launcher. Concurrency within a worker (the default) is test/e2e/concurrency.test.ts's.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { PoolFields } from '../../host/wire/stats.ts';
import { get, type Reply } from '../helpers/http.ts';
import { total } from '../helpers/metrics.ts';
import {
  callMarker,
  eventually,
  holdController,
  makeSandbox,
  readLog,
  ROOT,
  startStack,
  type Running,
  type Sandbox,
} from '../helpers/stack.ts';

type Pool = PoolFields;

/** The host's pool fields, as /server-status?json shows them (none while a stuck worker holds up the host's /status). */
async function poolOf(stack: Running): Promise<Pool | undefined> {
  const json = JSON.parse((await get(stack.url, '/server-status?json')).body) as { hosts: { summary?: Pool }[] };
  return json.hosts[0].summary;
}

/** Waits until the host's pool fields satisfy `ok`. */
function poolWhen(stack: Running, ok: (pool: Pool) => boolean, what: string, timeoutMs = 10_000): Promise<Pool> {
  return eventually(
    async () => {
      const pool = await poolOf(stack);
      return pool && ok(pool) ? pool : undefined;
    },
    timeoutMs,
    what,
  );
}

/** The host pool's pid, from its start line. */
function hostPid(sandbox: Sandbox): number {
  const line = readLog(sandbox, 'host.log').find((l) => /Host pool \d+ serving/.test(l));
  return Number(/Host pool (\d+)/.exec(line ?? '')?.[1]);
}

/** The host pool's child processes (its workers), from /proc. */
function workerProcesses(pid: number): number {
  if (!existsSync(`/proc/${pid}`)) return -1;
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).length;
}

describe('request-level dispatch (--workers 2 --max-execution-time 2)', function () {
  // Five rounds, each waiting for a stuck call's 504 and, for a loop, its worker's kill and replacement.
  this.timeout(60_000);
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Quick.ts'), `export default () => 'quick';\n`);
    stack = await startStack(sandbox, ['--workers', '2', '--max-execution-time', '2']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  /**
   * Five rounds: a controller of `name`'s in flight, then ten requests to Quick; all ten end before the stuck one's
   * 504. One controller a round: one whose calls got three workers killed within 10 s would be quarantined.
   */
  async function roundsBehind(name: string, body: string): Promise<void> {
    for (let round = 1; round <= 5; round++) {
      const controller = `${name}${round}`;
      const marker = callMarker(sandbox, controller);
      writeFileSync(join(sandbox.controllers, `${controller}.ts`), `export default async () => { ${marker.statement} ${body} };\n`);
      // Both workers up and idle (the last round's stuck one has been replaced).
      await poolWhen(stack, (p) => p.idleProcesses === 2, `round ${round}: two idle workers`);
      const order: string[] = [];
      const stuck = get(stack.url, `/External/${controller}?round=${round}`).then((reply) => {
        order.push('stuck');
        return reply;
      });
      await marker.reached(5000);
      const quick: Reply[] = [];
      for (let i = 0; i < 10; i++) {
        quick.push(await get(stack.url, '/External/Quick'));
        order.push('quick');
      }
      const stuckReply = await stuck;
      expect(quick.map((r) => r.status)).to.deep.equal(Array(10).fill(200));
      expect(stuckReply.status).to.equal(504);
      expect(order.indexOf('stuck'), `round ${round}: ${order.join(' ')}`).to.equal(10);
      // The timeout line names the controller that was running.
      const id = stuckReply.headers['x-request-id'] as string;
      const line = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes(id)), 3000, 'the 504 line');
      expect(line).to.contain(`Timeout waiting for output from controller ${controller}`);
    }
    const timeouts = readLog(sandbox, 'error.log').filter((l) => l.includes('Timeout waiting for output'));
    expect(timeouts.filter((l) => l.includes('controller Quick'))).to.deep.equal([]);
  }

  it('serves every request to a healthy controller while a controller is stuck in a synchronous loop', async function () {
    await roundsBehind('Spin', 'for (;;) {}');
  });

  it('serves every request to a healthy controller while a controller awaits forever (php-fpm counts it busy)', async function () {
    await roundsBehind('Forever', 'await new Promise(() => {});');
  });
});

describe('the primary sends each request to the least busy worker (--workers 2 --worker-concurrency 2)', function () {
  let sandbox: Sandbox;
  let stack: Running;
  let release: (() => void) | undefined;

  after(async function () {
    release?.();
    await stack?.stop();
    sandbox?.remove();
  });

  it('sends a second request to the idle worker, not to the first with room, then alternates', async function () {
    sandbox = makeSandbox();
    // Each call writes its worker's pid, then awaits the release file: the proxy routes nothing itself at a
    // bounded concurrency, so every request goes through the primary's dispatcher.
    const pids = join(sandbox.dir, 'pids');
    const releaseFile = join(sandbox.dir, 'release');
    writeFileSync(
      join(sandbox.controllers, 'Where.ts'),
      `import { appendFileSync, existsSync } from 'node:fs';\n` +
        `export default async () => { appendFileSync(${JSON.stringify(pids)}, process.pid + '\\n'); ` +
        `while (!existsSync(${JSON.stringify(releaseFile)})) await new Promise((r) => setTimeout(r, 20)); return String(process.pid); };\n`,
    );
    release = () => writeFileSync(releaseFile, '');
    stack = await startStack(sandbox, ['--workers', '2', '--worker-concurrency', '2', '--proxy-workers', '1']);
    await poolWhen(stack, (p) => p.idleProcesses === 2, 'two idle workers');
    const ran = (count: number) =>
      eventually(
        () => {
          const lines = (existsSync(pids) ? readFileSync(pids, 'utf8') : '').split('\n').filter(Boolean);
          return lines.length >= count ? lines : undefined;
        },
        10_000,
        `${count} calls running`,
      );
    const held: Promise<Reply>[] = [];
    // One at a time, so each choice sees the last one's request in flight.
    for (let i = 1; i <= 4; i++) {
      held.push(get(stack.url, `/External/Where?i=${i}`));
      await ran(i);
    }
    const [a, b, c, d] = await ran(4);
    expect(b, 'the second request: the idle worker, not the first one again').to.not.equal(a);
    expect([c, d], 'then one more each').to.have.members([a, b]);
    release();
    expect((await Promise.all(held)).map((r) => r.status)).to.deep.equal([200, 200, 200, 200]);
  });
});

describe('the listen queue (--workers 1 --worker-concurrency 1)', function () {
  let sandbox: Sandbox;
  let stack: Running;
  /** A held request is let go before the stop, which would otherwise wait for it (--shutdown-timeout). */
  let release: (() => void) | undefined;

  afterEach(async function () {
    release?.();
    release = undefined;
    await stack?.stop();
    sandbox?.remove();
  });

  it('answers 503 past --listen-backlog with mod_fcgid words, serves what waited, and shows the pool fields', async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Quick.ts'), `export default () => 'quick';\n`);
    const hold = holdController(sandbox, 'Hold');
    release = hold.release;
    stack = await startStack(sandbox, ['--workers', '1', '--worker-concurrency', '1', '--listen-backlog', '1', '--proxy-workers', '1']);
    const held = get(stack.url, '/External/Hold');
    await hold.reached();
    const queued = get(stack.url, '/External/Quick?queued');
    await poolWhen(stack, (p) => p.listenQueue === 1, 'one request in the listen queue');
    const refused = await get(stack.url, '/External/Quick?refused');
    expect(refused.status).to.equal(503);
    expect(refused.body).to.contain('<title>503 Service Unavailable</title>');
    const id = refused.headers['x-request-id'] as string;
    const line = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes(id)), 3000, 'the error.log line');
    expect(line).to.match(/\[fcgid:warn\] .*mod_fcgid: can't apply process slot for \/External\/Quick/);
    const hostLine = await eventually(() => readLog(sandbox, 'host.log').find((l) => l.includes(`[req ${id}]`)), 3000, 'the host.log line');
    expect(hostLine).to.contain('--listen-backlog');

    const pool = (await poolOf(stack))!;
    expect(pool).to.include({
      processManager: 'static',
      listenQueue: 1,
      maxListenQueue: 1,
      listenQueueLen: 1,
      idleProcesses: 0,
      activeProcesses: 1,
      totalProcesses: 1,
    });
    const metrics = (await get(stack.url, '/metrics')).body;
    // The launcher's own host is labelled `local` on /metrics (docs/operations.md, "Every metric").
    const upstream = { upstream: 'local' };
    expect(total(metrics, 'extqs_host_listen_queue', upstream)).to.equal(pool.listenQueue);
    expect(total(metrics, 'extqs_host_max_listen_queue', upstream)).to.equal(pool.maxListenQueue);
    expect(total(metrics, 'extqs_host_listen_queue_length', upstream)).to.equal(pool.listenQueueLen);
    expect(total(metrics, 'extqs_host_active_processes', upstream)).to.equal(pool.activeProcesses);
    expect(total(metrics, 'extqs_host_idle_processes', upstream)).to.equal(pool.idleProcesses);
    expect(total(metrics, 'extqs_host_total_processes', upstream)).to.equal(pool.totalProcesses);
    const auto = (await get(stack.url, '/server-status?auto')).body;
    expect(auto).to.match(/^HostPool: unix:\S+ process_manager=static listen_queue=1 max_listen_queue=1 listen_queue_len=1 /m);
    expect(auto).to.match(/^HostPoolSettings: unix:\S+ --workers 1 --pm "static" --listen-backlog 1$/m);

    hold.release();
    expect((await held).body).to.equal('released');
    expect((await queued).body).to.equal('quick');
  });

  it('answers a controller with no file from the primary while every worker is busy, with the lines a worker wrote', async function () {
    sandbox = makeSandbox();
    const hold = holdController(sandbox, 'Hold');
    release = hold.release;
    // No request may wait: one that needed a worker now is refused 503 at once.
    stack = await startStack(sandbox, ['--workers', '1', '--worker-concurrency', '1', '--listen-backlog', '0', '--proxy-workers', '1']);
    const held = get(stack.url, '/External/Hold');
    await hold.reached();

    const missing = await get(stack.url, '/External/Nowhere/a%20b?sn=1&no=');
    expect(missing.status).to.equal(500);
    expect(missing.body).to.contain('<title>500 Internal Server Error</title>');
    const id = missing.headers['x-request-id'] as string;
    const fatal = `Failed opening controller script ${sandbox.controllers}/Nowhere.ts: No such file or directory (nor Nowhere.js) in GET /External/Nowhere/a%20b?sn=1&no=`;
    const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const hostLine = await eventually(() => readLog(sandbox, 'host.log').find((l) => l.includes(`[req ${id}]`)), 3000, 'the host.log line');
    expect(hostLine).to.match(
      new RegExp(
        `^\\[\\d{2}-[A-Z][a-z]{2}-\\d{4} \\d{2}:\\d{2}:\\d{2}\\.\\d{3} UTC\\] \\[error\\] \\[req ${escaped(id)}\\] ${escaped(fatal)}$`,
      ),
    );
    const errorLines = await eventually(
      () => {
        const lines = readLog(sandbox, 'error.log').filter((l) => l.endsWith(`request_id: ${id}`));
        return lines.length === 2 ? lines : undefined;
      },
      3000,
      'the two error.log lines',
    );
    const apacheLine = (module: string, message: string) =>
      new RegExp(
        `^\\[[A-Z][a-z]{2} [A-Z][a-z]{2} \\d{2} \\d{2}:\\d{2}:\\d{2}\\.\\d{6} \\d{4}\\] \\[${module}\\] \\[pid \\d+\\] \\[client 127\\.0\\.0\\.1:\\d+\\] ${escaped(message)}, request_id: ${escaped(id)}$`,
      );
    expect(errorLines[0]).to.match(apacheLine('fcgid:warn', `mod_fcgid: stderr: PHP Fatal error:  ${fatal}`));
    expect(errorLines[1]).to.match(apacheLine('core:error', 'End of script output before headers: /External/Nowhere/a%20b'));
    const accessLine = await eventually(
      () => readLog(sandbox, 'access.log').find((l) => l.includes('/External/Nowhere')),
      3000,
      'the access.log line',
    );
    expect(accessLine).to.match(/^127\.0\.0\.1 - - \[[^\]]+\] "GET \/External\/Nowhere\/a%20b\?sn=1&no= HTTP\/1\.1" 500 \d+ "-" "-"$/);

    // A controller added a moment ago is not "missing": it needs a worker, and none is free.
    writeFileSync(join(sandbox.controllers, 'Fresh.ts'), `export default () => 'fresh';\n`);
    expect((await get(stack.url, '/External/Fresh')).status).to.equal(503);
    // A name that is not an identifier is the proxy's 404: it needs no worker.
    expect((await get(stack.url, '/External/no-such')).status).to.equal(404);

    hold.release();
    expect((await held).body).to.equal('released');
    expect((await get(stack.url, '/External/Fresh')).body).to.equal('fresh');
    // Counted as a worker counted it.
    const status = JSON.parse((await get(stack.url, '/server-status?json')).body) as {
      hosts: { summary?: { controllers: Record<string, { requests: number; loadFailures: number }> } }[];
    };
    expect(status.hosts[0].summary?.controllers['(missing)']).to.include({ requests: 1, loadFailures: 1 });
  });

  it('fails no queued request when the stuck worker is killed', async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Quick.ts'), `export default () => 'quick';\n`);
    const spin = callMarker(sandbox, 'Spin');
    writeFileSync(join(sandbox.controllers, 'Spin.ts'), `export default () => { ${spin.statement} for (;;) {} };\n`);
    // The proxy waits longer than the watchdog: the queued requests outlive the kill.
    stack = await startStack(sandbox, [
      '--workers',
      '1',
      '--worker-concurrency',
      '1',
      '--max-execution-time',
      '1',
      '--upstream-timeout',
      '20',
      '--proxy-workers',
      '1',
    ]);
    const stuck = get(stack.url, '/External/Spin');
    await spin.reached();
    const queued = [1, 2, 3].map((i) => get(stack.url, `/External/Quick?${i}`));
    await poolWhen(stack, (p) => p.listenQueue === 3, 'three requests in the listen queue');
    const replies = await Promise.all(queued);
    expect(replies.map((r) => [r.status, r.body])).to.deep.equal(Array(3).fill([200, 'quick']));
    expect((await stuck).status).to.equal(500);
    // The line is written when the pool saw the exit; the file may have it a moment after the replies.
    await eventually(
      () => (readLog(sandbox, 'host.log').some((l) => /Worker \d+ exited with signal SIGKILL/.test(l)) ? true : undefined),
      3000,
      'the worker exit line',
    );
  });
});

describe('process manager modes', function () {
  let sandbox: Sandbox;
  let stack: Running;

  afterEach(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('ondemand: no worker at rest, one started by a request, stopped after --worker-idle-timeout', async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Quick.ts'), `export default () => 'quick';\n`);
    stack = await startStack(sandbox, ['--pm', 'ondemand', '--workers', '2', '--worker-idle-timeout', '1', '--proxy-workers', '1']);
    const pid = hostPid(sandbox);
    expect(workerProcesses(pid)).to.equal(0);
    expect(await poolOf(stack)).to.include({
      processManager: 'ondemand',
      processManagerSettings: '--workers 2 --pm "ondemand" --worker-idle-timeout 1 --listen-backlog 511',
      totalProcesses: 0,
      idleProcesses: 0,
    });
    expect((await get(stack.url, '/External/Quick')).body).to.equal('quick');
    expect(workerProcesses(pid)).to.equal(1);
    await eventually(() => (workerProcesses(pid) === 0 ? true : undefined), 10_000, 'the idle worker to stop');
    expect(readLog(sandbox, 'host.log').some((l) => l.includes('Stopping idle worker') && l.includes('idle more than 1 s'))).to.equal(true);
    expect((await get(stack.url, '/External/Quick')).body).to.equal('quick');
  });

  it('ondemand: a request past --workers busy waits, and max children reached counts it', async function () {
    sandbox = makeSandbox();
    const hold = holdController(sandbox, 'Hold');
    writeFileSync(join(sandbox.controllers, 'Quick.ts'), `export default () => 'quick';\n`);
    stack = await startStack(sandbox, ['--pm', 'ondemand', '--workers', '1', '--worker-concurrency', '1', '--proxy-workers', '1']);
    const held = get(stack.url, '/External/Hold');
    await hold.reached(10_000);
    const queued = get(stack.url, '/External/Quick');
    const pool = await poolWhen(stack, (p) => p.listenQueue === 1, 'a request in the queue');
    expect(pool).to.include({ totalProcesses: 1, maxChildrenReached: 1 });
    hold.release();
    expect((await held).body).to.equal('released');
    expect((await queued).body).to.equal('quick');
    expect(readLog(sandbox, 'host.log').some((l) => l.includes('server reached max_children setting (1)'))).to.equal(true);
  });

  it('dynamic: starts a worker when all are at --worker-concurrency, and stops those past --max-spare-workers', async function () {
    sandbox = makeSandbox();
    const hold = holdController(sandbox, 'Hold');
    stack = await startStack(sandbox, [
      ...['--pm', 'dynamic', '--workers', '4', '--start-workers', '2', '--min-spare-workers', '1', '--max-spare-workers', '2'],
      ...['--worker-concurrency', '2', '--proxy-workers', '1'],
    ]);
    expect(workerProcesses(hostPid(sandbox))).to.equal(2);
    const held = [1, 2, 3].map(() => get(stack.url, '/External/Hold'));
    await hold.reached(5000, 3);
    // One worker at its limit and one below it: that one is the spare, and none is started.
    await poolWhen(stack, (p) => p.activeProcesses === 2 && p.totalProcesses === 2, 'both workers busy');
    held.push(get(stack.url, '/External/Hold'));
    await hold.reached(5000, 4);
    // Both at their limit (Passenger's rule): the maintenance starts one to have a spare again.
    await poolWhen(stack, (p) => p.activeProcesses === 2 && p.idleProcesses === 1 && p.totalProcesses === 3, 'a spare worker started');
    hold.release();
    await Promise.all(held);
    // Three idle, more than 2: one is stopped.
    await poolWhen(stack, (p) => p.idleProcesses === 2 && p.totalProcesses === 2, 'the extra spare stopped');
    expect(readLog(sandbox, 'host.log').some((l) => l.includes('Stopping idle worker') && l.includes('more than 2 idle'))).to.equal(true);
  });
});

describe('process manager settings', function () {
  let sandbox: Sandbox;
  beforeEach(() => (sandbox = makeSandbox()));
  afterEach(() => sandbox.remove());

  const host = (args: string[]) =>
    spawnSync(process.execPath, ['bin/extqs.js', 'host', '--www', sandbox.www, '--logs', sandbox.logs, ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 30_000,
    });

  // php-fpm's rules: min_spare <= start <= max_spare <= max_children.
  const refused: [string[], string][] = [
    [
      ['--max-spare-workers', '3', '--workers', '2'],
      '--max-spare-workers (EXTQS_MAX_SPARE_WORKERS) must be at most --workers (2), got "3"',
    ],
    [
      ['--min-spare-workers', '3', '--max-spare-workers', '2', '--workers', '4'],
      '--max-spare-workers (EXTQS_MAX_SPARE_WORKERS) must be at least --min-spare-workers (3), got "2"',
    ],
    [
      ['--start-workers', '5', '--workers', '8'],
      '--start-workers (EXTQS_START_WORKERS) must be from --min-spare-workers (1) to --max-spare-workers (3), got "5"',
    ],
    [
      ['--min-spare-workers', '5', '--workers', '4'],
      '--min-spare-workers (EXTQS_MIN_SPARE_WORKERS) must be at most --workers (4), got "5"',
    ],
  ];
  for (const [args, message] of refused) {
    it(`--pm dynamic ${args.join(' ')} stops the start, naming the setting and the value`, function () {
      const result = host(['--pm', 'dynamic', ...args]);
      expect(result.status).to.equal(2);
      expect(result.stderr).to.contain(message);
    });
  }

  it('extqs check shows the process manager settings of the mode', function () {
    const result = spawnSync(
      process.execPath,
      ['bin/extqs.js', 'check', '--www', sandbox.www, '--logs', sandbox.logs, '--pm', 'ondemand', '--workers', '3'],
      { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
    );
    expect(result.stdout).to.contain('host: 3 workers (--workers 3 --pm "ondemand" --worker-idle-timeout 10 --listen-backlog 511)');
  });
});
