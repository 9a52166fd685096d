// The host as a production runtime (php-fpm's guarantees): worker pool, recycling, execution limit,
// status and ping, dispose hooks. Driven through the real launcher, or the host alone where the test
// needs its private socket.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startProcess, startStack, writtenText, type Running, type Sandbox } from '../helpers/stack.ts';

const workerPids = (sandbox: Sandbox) =>
  readLog(sandbox, 'host.log')
    .flatMap((l) => /Worker (\d+) ready/.exec(l)?.[1] ?? [])
    .map(Number);
const exitedPids = (sandbox: Sandbox) =>
  readLog(sandbox, 'host.log')
    .flatMap((l) => /Worker (\d+) exited/.exec(l)?.[1] ?? [])
    .map(Number);

describe('the host worker pool', function () {
  let sandbox: Sandbox;
  let stack: Running;

  afterEach(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('replaces a worker killed with SIGKILL while the others keep serving', async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Pid.ts'), `export default () => ({ pid: process.pid });\n`);
    stack = await startStack(sandbox, ['--workers', '2']);
    const [victim, survivor] = await eventually(
      () => (workerPids(sandbox).length === 2 ? workerPids(sandbox) : undefined),
      5000,
      'two workers',
    );
    process.kill(victim, 'SIGKILL');
    // Requests keep succeeding (a fresh connection each) while the victim is replaced.
    for (let i = 0; i < 20; i++) expect((await get(stack.url, '/External/Pid')).status).to.equal(200);
    const replacement = await eventually(
      () => workerPids(sandbox).find((p) => p !== victim && p !== survivor),
      10_000,
      'a replacement worker',
    );
    const exitLine = `Worker ${victim} exited with signal SIGKILL; starting a new one`;
    await eventually(() => (readLog(sandbox, 'host.log').some((l) => l.includes(exitLine)) ? true : undefined), 2000, 'the exit line');
    // The replacement is a live process, and the pool keeps answering.
    expect(() => process.kill(replacement, 0)).not.to.throw();
    for (let i = 0; i < 20; i++) expect((await get(stack.url, '/External/Pid')).status).to.equal(200);
  });

  it('recycles workers after --max-requests without failing a request', async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Pid.ts'), `export default () => ({ pid: process.pid });\n`);
    stack = await startStack(sandbox, ['--workers', '2', '--max-requests', '25']);
    const statuses: number[] = [];
    const burst = async () => {
      const pids = new Set<number>();
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          for (let i = 0; i < 10; i++) {
            const reply = await get(stack.url, '/External/Pid');
            statuses.push(reply.status);
            if (reply.status === 200) pids.add(JSON.parse(reply.body).pid);
          }
        }),
      );
      return pids;
    };
    const firstGeneration = await eventually(
      () => (workerPids(sandbox).length === 2 ? workerPids(sandbox) : undefined),
      5000,
      'two workers',
    );
    await burst(); // 100 requests: at least one worker passes 25 and asks to be recycled
    await eventually(
      () => (readLog(sandbox, 'host.log').some((l) => /Worker \d+ retiring/.test(l)) ? true : undefined),
      10_000,
      'a retirement',
    );
    const later = await burst(); // served by the replacements
    expect(statuses).to.have.length(200);
    expect(statuses.filter((s) => s !== 200)).to.deep.equal([]);
    expect([...later].filter((pid) => !firstGeneration.includes(pid))).to.have.length.greaterThan(0);
    await eventually(
      () => (readLog(sandbox, 'host.log').some((l) => l.includes('max_requests 25 reached')) ? true : undefined),
      2000,
      'the recycling reason',
    );
    expect(exitedPids(sandbox)).to.deep.equal([]); // recycled workers retire; none crashed
  });
});

describe('the execution limit (--max-execution-time 1)', function () {
  let sandbox: Sandbox;
  let stack: Running;

  beforeEach(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Quick.ts'), `export default () => 'quick';\n`);
    stack = await startStack(sandbox, ['--workers', '2', '--max-execution-time', '1']);
  });

  afterEach(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  async function expectOverrun(name: string, hostPhrase: string): Promise<void> {
    const reply = await get(stack.url, `/External/${name}?sn=1`);
    expect(reply.status).to.equal(504);
    expect(reply.body).to.contain('<title>504 Gateway Timeout</title>');
    const id = reply.headers['x-request-id'] as string;
    const errorLine = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes(id)), 3000, 'the error.log line');
    expect(errorLine).to.contain(`Timeout waiting for output from controller ${name}`);
    expect(errorLine).to.contain('max_execution_time 1 s');
    const hostLine = await eventually(
      () => readLog(sandbox, 'host.log').find((l) => l.includes(`[req ${id}]`) && l.includes('Maximum execution time')),
      5000,
      'the host.log line',
    );
    expect(hostLine).to.contain(`Maximum execution time of 1 seconds exceeded in controller ${name}`);
    expect(hostLine).to.contain(hostPhrase);
    // The pool goes on serving.
    await eventually(
      async () => ((await get(stack.url, '/External/Quick')).body === 'quick' ? true : undefined),
      10_000,
      'service after the overrun',
    );
  }

  it('answers 504 to a controller that awaits too long, logs both sides, and recycles the worker', async function () {
    writeFileSync(join(sandbox.controllers, 'Sleepy.ts'), `export default () => new Promise((r) => setTimeout(() => r('late'), 5000));\n`);
    await expectOverrun('Sleepy', 'request dropped');
    await eventually(
      () =>
        readLog(sandbox, 'host.log').some((l) => l.includes('Recycling worker') && l.includes('max_execution_time')) ? true : undefined,
      5000,
      'the recycle',
    );
  });

  it('answers 504 to a controller stuck in a synchronous loop, and the watchdog kills and replaces the worker', async function () {
    writeFileSync(join(sandbox.controllers, 'Spin.ts'), `export default () => { for (;;) {} };\n`);
    await expectOverrun('Spin', 'the worker was blocked for');
    await eventually(
      () => (readLog(sandbox, 'host.log').some((l) => /Worker \d+ exited with signal SIGKILL/.test(l)) ? true : undefined),
      5000,
      'the kill',
    );
  });
});

describe('the watchdog after SIGHUP changed the log format', function () {
  let sandbox: Sandbox;
  let stack: Running;

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('writes its line in the new layout (through its pipe to the pool, which writes host.log)', async function () {
    sandbox = makeSandbox();
    const conf = join(sandbox.dir, 'extqs.conf');
    writeFileSync(conf, 'WORKERS=1\nMAX_EXECUTION_TIME=1\n');
    writeFileSync(join(sandbox.controllers, 'Spin.ts'), `export default () => { for (;;) {} };\n`);
    stack = await startStack(sandbox, ['--config', conf]);
    writeFileSync(conf, 'WORKERS=1\nMAX_EXECUTION_TIME=1\nLOG_FORMAT=json\n');
    stack.child.kill('SIGHUP');
    await eventually(
      () => readLog(sandbox, 'host.log').find((l) => l.startsWith('{') && l.includes('SIGHUP received')),
      5000,
      'the reload line, as JSON',
    );
    const reply = await get(stack.url, '/External/Spin');
    expect(reply.status).to.equal(504);
    const line = await eventually(
      () => readLog(sandbox, 'host.log').find((l) => l.includes('the worker was blocked for')),
      5000,
      'the watchdog line',
    );
    expect(JSON.parse(line)).to.deep.include({ level: 'error', request_id: reply.headers['x-request-id'] });
  });
});

describe('a controller dispose() hook', function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    stack = await startStack(sandbox, ['--workers', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('is called when its version is replaced, so timers and connections can be closed', async function () {
    const marker = join(sandbox.dir, 'disposed.txt');
    const source = (v: number) =>
      `import { writeFileSync } from 'node:fs';\nconst timer = setInterval(() => {}, 1000);\nexport default () => ({ v: ${v} });\nexport function dispose() { clearInterval(timer); writeFileSync(${JSON.stringify(marker)}, 'disposed v${v}'); }\n`;
    writeFileSync(join(sandbox.controllers, 'Timed.ts'), source(1));
    expect((await get(stack.url, '/External/Timed')).body).to.equal('{"v":1}');
    expect(existsSync(marker)).to.equal(false);
    writeFileSync(join(sandbox.controllers, 'Timed.ts'), source(2));
    expect(await eventually(() => writtenText(marker), 3000, 'dispose')).to.equal('disposed v1');
    expect((await get(stack.url, '/External/Timed')).body).to.equal('{"v":2}');
  });
});

describe('the host status and ping pages', function () {
  let sandbox: Sandbox;
  let host: Running;
  const socketPath = () => join(sandbox.dir, 'host.sock');
  const onHost = (path: string) => get('http://localhost', path, { socketPath: socketPath() });

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Ok.ts'), `export default () => 'ok';\n`);
    writeFileSync(join(sandbox.controllers, 'Fails.ts'), `export default () => { throw new Error('no'); };\n`);
    host = await startProcess('host', ['--www', sandbox.www, '--logs', sandbox.logs, '--socket', socketPath(), '--workers', '2']);
  });

  after(async function () {
    await host?.stop();
    sandbox?.remove();
  });

  it('answers /ping with pong', async function () {
    const reply = await onHost('/ping');
    expect(reply.status).to.equal(200);
    expect(reply.body).to.equal('pong');
  });

  it('counts requests, errors and load failures per controller across the pool', async function () {
    for (let i = 0; i < 3; i++) await onHost('/External/Ok');
    await onHost('/External/Fails');
    await onHost('/External/Missing').catch(() => undefined); // ends without headers
    const status = JSON.parse((await onHost('/status')).body);
    expect(status.workers).to.equal(2);
    expect(status.controllers.Ok).to.include({ requests: 3, errors: 0, loadFailures: 0 });
    expect(status.controllers.Ok.versions).to.have.length(1);
    expect(status.controllers.Ok.lastReload).to.match(/^\d{4}-\d{2}-\d{2}T/);
    expect(status.controllers.Fails).to.include({ requests: 1, errors: 1 });
    // A name with no file is no row of its own: a client could mint them without end.
    expect(status.controllers).not.to.have.property('Missing');
    expect(status.controllers['(missing)']).to.include({ requests: 1, loadFailures: 1 });
    expect(status).not.to.have.property('processes');
  });

  it('lists each worker with ?full', async function () {
    const status = JSON.parse((await onHost('/status?full')).body);
    expect(status.processes).to.have.length(2);
    for (const worker of status.processes) {
      expect(worker.pid).to.be.a('number');
      expect(worker.state).to.be.oneOf(['idle', 'busy']);
      expect(worker.rss).to.be.greaterThan(0);
    }
    const total = status.processes.reduce((sum: number, w: { requests: number }) => sum + w.requests, 0);
    // The workers' requests and the one for a controller with no file, which the primary answered itself.
    expect(status.controllers['(missing)'].requests).to.equal(1);
    expect(total + 1).to.equal(status.acceptedRequests);
  });
});

describe('the host pages through the proxy', function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    stack = await startStack(sandbox, ['--workers', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('never reaches /status or /ping: they are static paths there, and absent', async function () {
    expect((await get(stack.url, '/status')).status).to.equal(404);
    expect((await get(stack.url, '/ping')).status).to.equal(404);
    expect((await get(stack.url, '/External/../status')).status).to.equal(404);
  });

  it("logs PHP's max_input_vars warning and drops the variables past 1000", async function () {
    writeFileSync(join(sandbox.controllers, 'Count.ts'), `export default ({ query }: any) => ({ n: Object.keys(query).length });\n`);
    const query = Array.from({ length: 1005 }, (_, i) => `v${i}=1`).join('&');
    const reply = await get(stack.url, `/External/Count?${query}`);
    expect(JSON.parse(reply.body)).to.deep.equal({ n: 1000 });
    const id = reply.headers['x-request-id'] as string;
    const line = await eventually(() => readLog(sandbox, 'host.log').find((l) => l.includes(`[req ${id}]`)), 3000, 'the warning');
    expect(line).to.contain('[warn]');
    expect(line).to.contain('Input variables exceeded 1000');
  });
});
