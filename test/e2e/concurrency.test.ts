// A host worker keeps Node's concurrency: it serves other requests while a controller awaits, and the
// requests go to the least busy worker that is not blocked (Passenger's router). Real processes through
// the launcher, at `npm start`'s shape (two proxy workers, two host workers) unless a test says otherwise.
import { existsSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { get, type Reply } from '../helpers/http.ts';
import { total } from '../helpers/metrics.ts';
import { steadyLoad } from '../helpers/steadyLoad.ts';
import { callMarker, eventually, holdController, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** Answers `{ pid }` after awaiting `ms`: which worker served it. */
function pidController(sandbox: Sandbox, name: string, ms: number): void {
  writeFileSync(
    join(sandbox.controllers, `${name}.ts`),
    `export default async () => { await new Promise((r) => setTimeout(r, ${ms})); return { pid: process.pid }; };\n`,
  );
}

/**
 * A request written by hand on its own connection, `pieces` of its body sent one every `everyMs`, then `last` once
 * finish() is called (and the pieces are out): the body takes as long as the test needs. Resolves with the raw answer.
 */
function trickle(url: string, head: string, pieces: string[], last: string, everyMs: number): { answer: Promise<string>; finish(): void } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let answer = '';
  socket.setEncoding('utf8');
  socket.on('data', (text: string) => (answer += text));
  const answered = new Promise<string>((resolve, reject) => {
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  void (async () => {
    socket.write(head);
    for (const piece of pieces) {
      await new Promise((r) => setTimeout(r, everyMs));
      socket.write(piece);
    }
    await finished;
    socket.write(last);
  })();
  return { answer: answered, finish };
}

describe('concurrency in a host worker (--workers 2, --proxy-workers 2)', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let stack: Running;
  /** Held requests are let go before the stop, which would otherwise wait for them. */
  const releases: (() => void)[] = [];

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Quick.ts'), `export default () => 'quick';\n`);
    writeFileSync(
      join(sandbox.controllers, 'Body.ts'),
      `export default async ({ body, post }) => ({ length: (await body.text()).length, post });\n`,
    );
    // The most calls each worker ran at once, as the calls themselves saw it (module state is the worker's).
    writeFileSync(
      join(sandbox.controllers, 'Await200.ts'),
      `let now = 0; let most = 0;\n` +
        `export default async () => { now += 1; most = Math.max(most, now); await new Promise((r) => setTimeout(r, 200)); now -= 1; return { pid: process.pid, most }; };\n`,
    );
    pidController(sandbox, 'Pid', 20);
    stack = await startStack(sandbox, ['--workers', '2', '--proxy-workers', '2']);
  });

  after(async function () {
    for (const release of releases) release();
    await stack?.stop();
    sandbox?.remove();
  });

  it('runs 100 concurrent requests to a controller that awaits 200 ms at once, on both workers', async function () {
    const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => get(stack.url, `/External/Await200?i=${i}`)));
    expect(replies.map((r) => r.status)).to.deep.equal(Array(100).fill(200));
    const mostByPid = new Map<number, number>();
    for (const { pid, most } of replies.map((r) => JSON.parse(r.body) as { pid: number; most: number }))
      mostByPid.set(pid, Math.max(mostByPid.get(pid) ?? 0, most));
    // One request a worker would show 1 each, and take ten seconds.
    expect([...mostByPid.keys()], 'both workers served').to.have.length(2);
    const together = [...mostByPid.values()].reduce((a, b) => a + b, 0);
    expect(together, `calls at once per worker: ${JSON.stringify([...mostByPid])}`).to.be.at.least(50);
  });

  it('answers another controller at once while ten clients hold requests', async function () {
    const hold = holdController(sandbox, 'Hold');
    releases.push(hold.release);
    let settled = 0;
    const held = Array.from({ length: 10 }, () => get(stack.url, '/External/Hold').finally(() => (settled += 1)));
    await hold.reached(10_000, 10);
    for (let i = 0; i < 5; i++) expect((await get(stack.url, '/External/Quick')).body).to.equal('quick');
    expect(settled, 'the held requests still wait').to.equal(0);
    hold.release();
    expect((await Promise.all(held)).map((r) => r.body)).to.deep.equal(Array(10).fill('released'));
  });

  it('serves fast requests beside slow chunked and slow form bodies', async function () {
    const chunked = [1, 2].map(() =>
      trickle(
        stack.url,
        'POST /External/Body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
        Array.from({ length: 14 }, () => '1\r\nx\r\n'),
        '1\r\nx\r\n0\r\n\r\n',
        100,
      ),
    );
    const form = 'a=1&b=22&c=333';
    const slowForm = trickle(
      stack.url,
      `POST /External/Body HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\nConnection: close\r\n\r\n`,
      [...form.slice(0, -1)],
      form.slice(-1),
      100,
    );
    const slowOnes = [...chunked, slowForm];
    let slowDone = false;
    const slow = Promise.all(slowOnes.map((t) => t.answer)).finally(() => (slowDone = true));
    const quick: Reply[] = [];
    for (let i = 0; i < 20; i++) quick.push(await get(stack.url, '/External/Quick'));
    expect(quick.map((r) => r.status)).to.deep.equal(Array(20).fill(200));
    expect(slowDone, 'the slow bodies are still arriving').to.equal(false);
    for (const t of slowOnes) t.finish();
    const [a, b, c] = await slow;
    for (const answer of [a, b])
      expect(answer)
        .to.match(/^HTTP\/1\.1 200 /)
        .and.to.contain('{"length":15,"post":{}}');
    expect(c, c)
      .to.match(/^HTTP\/1\.1 200 /)
      .and.to.contain('{"length":14,"post":{"a":"1","b":"22","c":"333"}}');
  });

  it('sends nothing new to a worker spinning in a loop, and nothing waits behind it', async function () {
    const spin = callMarker(sandbox, 'Spin');
    const release = join(sandbox.dir, 'Spin.release');
    releases.push(() => writeFileSync(release, ''));
    writeFileSync(
      join(sandbox.controllers, 'Spin.ts'),
      `import { existsSync } from 'node:fs';\nexport default () => { ${spin.statement} while (!existsSync(${JSON.stringify(release)})) {} return 'spun'; };\n`,
    );
    const spun = get(stack.url, '/External/Spin');
    await spin.reached(10_000);
    // At once: some reach the spinning worker before its watchdog says it is blocked, and go elsewhere after.
    const replies = await Promise.all(Array.from({ length: 30 }, (_, i) => get(stack.url, `/External/Pid?i=${i}`)));
    expect(replies.map((r) => r.status)).to.deep.equal(Array(30).fill(200));
    const blocked = await eventually(
      () => readLog(sandbox, 'host.log').find((l) => / Worker \d+ is blocked /.test(l)),
      5000,
      'the blocked line',
    );
    const spinner = Number(/Worker (\d+) is blocked/.exec(blocked)![1]);
    expect(total((await get(stack.url, '/metrics')).body, 'extqs_host_blocked_processes'), 'blocked workers on /metrics').to.equal(1);
    const pids = new Set(replies.map((r) => (JSON.parse(r.body) as { pid: number }).pid));
    expect([...pids], 'served by the other worker only').to.deep.equal([...pids].filter((pid) => pid !== spinner));
    expect(existsSync(release), 'the spinner still spins').to.equal(false);
    writeFileSync(release, '');
    expect((await spun).body).to.equal('spun');
    await eventually(
      () => readLog(sandbox, 'host.log').find((l) => l.includes(`Worker ${spinner} turns again`)),
      5000,
      'the turns-again line',
    );
  });
});

describe('a request body and the execution limit (--max-execution-time 1)', function () {
  this.timeout(30_000);
  let sandbox: Sandbox;
  let stack: Running;

  afterEach(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  for (const concurrency of ['0', '1']) {
    it(`answers an upload slower than the limit (--worker-concurrency ${concurrency}): its time is not the controller's`, async function () {
      sandbox = makeSandbox();
      writeFileSync(
        join(sandbox.controllers, 'Upload.ts'),
        `export default ({ files }) => ({ name: files.f?.name, size: files.f?.size });\n`,
      );
      stack = await startStack(sandbox, ['--workers', '1', '--max-execution-time', '1', '--worker-concurrency', concurrency]);
      // Loaded first: its compilation is the controller's time, which this test is not about.
      expect((await get(stack.url, '/External/Upload')).status).to.equal(200);
      const boundary = 'b0undary';
      // Past 64 KiB, which the host's primary would otherwise stream to a worker as it arrives.
      const content = 'y'.repeat(100_000);
      const body = `--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n${content}\r\n--${boundary}--\r\n`;
      // 2.5 s for the body: past the limit, and past the proxy's wait for an answer had it started then.
      const pieces = body.match(/[\s\S]{1,4096}/g)!;
      const upload = trickle(
        stack.url,
        `POST /External/Upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
        pieces.slice(0, -1),
        pieces.at(-1)!,
        Math.ceil(2500 / pieces.length),
      );
      upload.finish();
      const answer = await upload.answer;
      expect(answer).to.match(/^HTTP\/1\.1 200 /);
      expect(answer).to.contain(`{"name":"a.txt","size":${content.length}}`);
    });
  }
  it('answers a raw body the controller reads while it arrives, slower than the limit', async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Raw.ts'), `export default async ({ body }) => ({ length: (await body.text()).length });\n`);
    stack = await startStack(sandbox, ['--workers', '1', '--max-execution-time', '1']);
    expect((await get(stack.url, '/External/Raw')).status).to.equal(200);
    const pieces = Array.from({ length: 25 }, () => 'z'.repeat(1000));
    const upload = trickle(
      stack.url,
      `POST /External/Raw HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 26000\r\nConnection: close\r\n\r\n`,
      pieces,
      'z'.repeat(1000),
      100,
    );
    upload.finish();
    const answer = await upload.answer;
    expect(answer, answer).to.match(/^HTTP\/1\.1 200 /);
    expect(answer).to.contain('{"length":26000}');
  });
});

describe('--worker-concurrency 1 and the listen queue under a flood (--workers 1 --listen-backlog 5)', function () {
  let sandbox: Sandbox;
  let stack: Running;
  let release: (() => void) | undefined;

  after(async function () {
    release?.();
    await stack?.stop();
    sandbox?.remove();
  });

  it('queues five, refuses the rest 503 at once, and serves the five in order once the worker is free', async function () {
    sandbox = makeSandbox();
    const hold = holdController(sandbox, 'Hold');
    release = hold.release;
    pidController(sandbox, 'Quick', 0);
    stack = await startStack(sandbox, ['--workers', '1', '--worker-concurrency', '1', '--listen-backlog', '5', '--proxy-workers', '1']);
    const held = get(stack.url, '/External/Hold');
    await hold.reached();
    const order: number[] = [];
    const flood = Array.from({ length: 20 }, (_, i) =>
      get(stack.url, `/External/Quick?i=${i}`).then((reply) => {
        if (reply.status === 200) order.push(i);
        return reply;
      }),
    );
    // The refused ones are answered while the worker is still held.
    const refused = await eventually(
      () => {
        const lines = readLog(sandbox, 'host.log').filter((l) => l.includes('Refused GET /External/Quick'));
        return lines.length === 15 ? lines : undefined;
      },
      10_000,
      'fifteen refusals',
    );
    expect(refused[0]).to.contain('every worker is busy and 5 requests wait already (--listen-backlog)');
    hold.release();
    const replies = await Promise.all(flood);
    expect(replies.filter((r) => r.status === 503)).to.have.length(15);
    expect(replies.filter((r) => r.status === 200)).to.have.length(5);
    expect((await held).body).to.equal('released');
    // FIFO: the five served in the order they queued, which is the order they were refused or not.
    expect(order).to.deep.equal([...order].sort((a, b) => a - b));
  });
});

describe('--worker-concurrency 1 --workers 1: a body is in before its worker is chosen', function () {
  let sandbox: Sandbox;
  let stack: Running;

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('serves other requests on the only worker while a long chunked body trickles in', async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Quick.ts'), `export default () => 'quick';\n`);
    writeFileSync(join(sandbox.controllers, 'Body.ts'), `export default async ({ body }) => ({ length: (await body.text()).length });\n`);
    stack = await startStack(sandbox, ['--workers', '1', '--worker-concurrency', '1', '--proxy-workers', '1']);
    // Past 64 KiB of chunks: spooled to a file, where a shorter one is read into memory.
    const chunk = `2000\r\n${'c'.repeat(0x2000)}\r\n`;
    const slow = trickle(
      stack.url,
      'POST /External/Body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
      Array.from({ length: 10 }, () => chunk),
      `${chunk}0\r\n\r\n`,
      50,
    );
    let done = false;
    const answer = slow.answer.finally(() => (done = true));
    for (let i = 0; i < 10; i++) expect((await get(stack.url, '/External/Quick', { timeoutMs: 10_000 })).body).to.equal('quick');
    expect(done, 'the body is still arriving').to.equal(false);
    slow.finish();
    const text = await answer;
    expect(text, text).to.match(/^HTTP\/1\.1 200 /);
    expect(text).to.contain(`{"length":${11 * 0x2000}}`);
  });
});

describe('a controller that ends its worker (--workers 1)', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let stack: Running;

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('has its worker replaced at once every time, however often, and the next request answered', async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Quick.ts'), `export default () => 'quick';\n`);
    // process.exit() would end only its request (controllerFaults.test.ts): a signal ends the worker. Six controllers,
    // one death each: a controller that kills three workers in 10 s is quarantined (workerDeaths.test.ts).
    for (let i = 0; i < 6; i++)
      writeFileSync(join(sandbox.controllers, `Exit${i}.ts`), `export default () => { process.kill(process.pid, 'SIGKILL'); };\n`);
    stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1']);
    for (let i = 0; i < 6; i++) expect((await get(stack.url, `/External/Exit${i}`)).status).to.equal(500);
    expect((await get(stack.url, '/External/Quick')).body).to.equal('quick');
    const exits = await eventually(
      () => {
        const lines = readLog(sandbox, 'host.log').filter((l) => / Worker \d+ exited with signal SIGKILL; starting a new one/.test(l));
        return lines.length >= 6 ? lines : undefined;
      },
      10_000,
      'six exit lines',
    );
    // Past twice --workers exits in 10 s a start used to wait 1 s: "starting a new one in 1000 ms".
    expect(exits.filter((l) => l.includes('starting a new one in '))).to.deep.equal([]);
  });
});

describe('a worker that dies with requests in flight (--workers 2, --proxy-workers 1)', function () {
  this.timeout(30_000);
  let sandbox: Sandbox;
  let stack: Running;
  let release: (() => void) | undefined;

  after(async function () {
    release?.();
    await stack?.stop();
    sandbox?.remove();
  });

  it('sends its GET requests that had no answer once more to another worker', async function () {
    sandbox = makeSandbox();
    const hold = holdController(sandbox, 'Hold');
    release = hold.release;
    // process.exit() would end only its request (controllerFaults.test.ts): a signal ends the worker.
    writeFileSync(join(sandbox.controllers, 'Exit.ts'), `export default () => { process.kill(process.pid, 'SIGKILL'); };\n`);
    stack = await startStack(sandbox, ['--workers', '2', '--proxy-workers', '1']);
    const held = Array.from({ length: 6 }, (_, i) => get(stack.url, `/External/Hold?i=${i}`));
    await hold.reached(10_000, 6);
    // A POST with a body is not sent again: it ends one worker only, and the three GETs it held go elsewhere.
    expect((await get(stack.url, '/External/Exit', { method: 'POST', body: 'x' })).status).to.equal(500);
    await hold.reached(10_000, 9);
    hold.release();
    expect((await Promise.all(held)).map((r) => r.body)).to.deep.equal(Array(6).fill('released'));
    const resent = await eventually(
      () => {
        const lines = readLog(sandbox, 'error.log').filter((l) =>
          l.includes('closed the connection before answering for /External/Hold; sent again'),
        );
        return lines.length === 3 ? lines : undefined;
      },
      5000,
      'three resent lines',
    );
    expect(resent[0]).to.match(/\[proxy:warn\] .* host worker \d+ closed the connection before answering/);
  });
});

describe('a worker that dies with body-less POST requests in flight (--workers 2, --proxy-workers 1)', function () {
  this.timeout(30_000);
  let sandbox: Sandbox;
  let stack: Running;
  let release: (() => void) | undefined;

  after(async function () {
    release?.();
    await stack?.stop();
    sandbox?.remove();
  });

  it('sends none of them again: only GET and HEAD go once more, though nothing was consumed', async function () {
    sandbox = makeSandbox();
    const hold = holdController(sandbox, 'Hold');
    release = hold.release;
    // process.exit() would end only its request (controllerFaults.test.ts): a signal ends the worker.
    writeFileSync(join(sandbox.controllers, 'Exit.ts'), `export default () => { process.kill(process.pid, 'SIGKILL'); };\n`);
    stack = await startStack(sandbox, ['--workers', '2', '--proxy-workers', '1']);
    const post = { method: 'POST', headers: { 'content-length': '0' } };
    const held = Array.from({ length: 4 }, (_, i) => get(stack.url, `/External/Hold?i=${i}`, post));
    await hold.reached(10_000, 4);
    // Exit carries a body, so it is never sent again itself: it ends one worker and what that one held.
    expect((await get(stack.url, '/External/Exit', { method: 'POST', body: 'x' })).status).to.equal(500);
    hold.release();
    const statuses = (await Promise.all(held)).map((r) => r.status);
    expect(
      statuses.filter((status) => status !== 200),
      'the POSTs the dead worker held failed',
    ).to.not.deep.equal([]);
    expect(hold.calls(), 'each POST ran once').to.equal(4);
    expect(readLog(sandbox, 'error.log').filter((l) => l.includes('sent again'))).to.deep.equal([]);
  });
});

describe('a call the worker drops at the limit (--max-execution-time 1 --upstream-timeout 0)', function () {
  let sandbox: Sandbox;
  let stack: Running;

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('is answered 500 once, not sent again as a request whose worker died', async function () {
    sandbox = makeSandbox();
    const marker = callMarker(sandbox, 'Slow');
    writeFileSync(
      join(sandbox.controllers, 'Slow.ts'),
      `export default async () => { ${marker.statement} await new Promise((r) => setTimeout(r, 60_000)); };\n`,
    );
    stack = await startStack(sandbox, ['--workers', '2', '--max-execution-time', '1', '--upstream-timeout', '0']);
    const reply = await get(stack.url, '/External/Slow');
    expect(reply.status).to.equal(500);
    expect(marker.calls(), 'the controller ran once').to.equal(1);
  });
});

describe('SIGHUP changing --worker-concurrency under load', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let stack: Running;
  const conf = () => join(sandbox.dir, 'extqs.conf');

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('fails no request, and each worker runs one at a time while it is 1', async function () {
    sandbox = makeSandbox();
    writeFileSync(
      join(sandbox.controllers, 'Count.ts'),
      `let now = 0;\nexport default async () => { now += 1; const mine = now; await new Promise((r) => setTimeout(r, 10)); now -= 1; return { mine }; };\n`,
    );
    writeFileSync(conf(), 'EXTQS_WORKER_CONCURRENCY=0\n');
    stack = await startStack(sandbox, ['--config', conf(), '--workers', '2']);
    const load = steadyLoad(stack.url, 8, (n) => `/External/Count?n=${n}`, 2);
    const applied = (change: string) =>
      eventually(() => readLog(sandbox, 'host.log').find((l) => l.includes(`--worker-concurrency ${change}`)), 10_000, `${change} applied`);
    try {
      await load.answers(200, 20_000);
      writeFileSync(conf(), 'EXTQS_WORKER_CONCURRENCY=1\n');
      stack.child.kill('SIGHUP');
      await applied('0 -> 1');
      // What was in flight when it changed has ended by the time 50 more answers are in.
      await load.answers(load.samples.length + 50, 20_000);
      const at1 = load.samples.length;
      await load.answers(at1 + 200, 20_000);
      const oneAtATime = load.samples.slice(at1, at1 + 200).map((s) => (JSON.parse(s.body) as { mine: number }).mine);
      expect(Math.max(...oneAtATime), 'calls at once in a worker at --worker-concurrency 1').to.equal(1);
      writeFileSync(conf(), 'EXTQS_WORKER_CONCURRENCY=0\n');
      stack.child.kill('SIGHUP');
      await applied('1 -> 0');
      await load.answers(load.samples.length + 200, 20_000);
    } finally {
      await load.stop();
    }
    const failed = load.samples.filter((s) => s.status !== 200);
    expect(failed, JSON.stringify(failed.slice(0, 3))).to.deep.equal([]);
  });
});
