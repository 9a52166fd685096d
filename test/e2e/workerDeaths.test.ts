// A controller that kills its own worker costs that worker and its own request, never its neighbours', and is
// quarantined when it keeps doing so (docs/design.md §6.4; docs/operations.md, "What a
// controller's failure costs").
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get, type Reply } from '../helpers/http.ts';
import { total } from '../helpers/metrics.ts';
import { eventually, makeSandbox, readHostEvents, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

describe("a controller that kills its own worker (process.kill(process.pid, 'SIGKILL'))", function () {
  let sandbox: Sandbox;
  let stack: Running;
  const write = (file: string, source: string) => writeFileSync(join(sandbox.controllers, file), source);

  before(async function () {
    sandbox = makeSandbox();
    write('Killer.ts', "export default () => { process.kill(process.pid, 'SIGKILL'); return 'not killed'; };\n");
    // A neighbour in flight for a while, on whichever worker: its answer is checked byte for byte.
    write(
      'Neighbour.ts',
      'export default async ({ query }: { query: Record<string, unknown> }) => { await new Promise((r) => setTimeout(r, 300)); return `neighbour ${String(query.n)}`; };\n',
    );
    stack = await startStack(sandbox, ['--workers', '2']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  /** host.log's death lines, each `Worker N exited with …`, that name request `id`. */
  const deathLinesOf = (id: string) =>
    readHostEvents(sandbox).filter((e) => e.includes(`[req ${id}]`) && / Worker \d+ exited with /.test(e));
  const controllerRequests = async () =>
    total((await get(stack.url, '/metrics')).body, 'extqs_host_controller_requests_total', { controller: 'Neighbour' }) ?? 0;

  /** One kill beside twelve neighbours; returns the killer's reply once every neighbour answered as it should. */
  async function killBesideNeighbours(round: number, killer = 'Killer'): Promise<Reply> {
    const neighbours = Array.from({ length: 12 }, (_, i) => get(stack.url, `/External/Neighbour?n=${round}-${i}`));
    // The neighbours are on both workers before the kill.
    await new Promise((resolve) => setImmediate(resolve));
    const killed = await get(stack.url, `/External/${killer}?round=${round}`);
    const answers = await Promise.all(neighbours);
    expect(answers.map((a) => `${a.status} ${a.body}`)).to.deep.equal(answers.map((_, i) => `200 neighbour ${round}-${i}`));
    return killed;
  }

  it('costs one worker and its own request, sent nowhere again, and no neighbour; one line says so; counters hold', async function () {
    const before = await controllerRequests();
    const killed = await killBesideNeighbours(1);
    expect(killed.status).to.be.within(500, 599);
    const id = killed.headers['x-request-id'] as string;
    const line = await eventually(() => deathLinesOf(id)[0], 5000, 'the death line');
    expect(line).to.match(
      /\[error\] \[req [^\]]+\] Worker \d+ exited with signal SIGKILL; starting a new one\. Cause: process\.kill\(process\.pid, "SIGKILL"\) called by controller Killer, in request [^ ]+, which is not sent again\. It was relaying nothing; /,
    );
    // The neighbours the proxy had sent there itself, which the primary never saw, each with its fate.
    expect(line).to.match(/; it ran from a proxy (GET \/External\/Neighbour\?n=1-\d+ \(req [^,]+, sent again by its proxy\)(, |$))+$/);
    // Sent again, it would have killed a second worker: one line only, once the replacement listens.
    await eventually(
      async () => ((await get(stack.url, '/External/Neighbour?n=after')).status === 200 ? true : undefined),
      5000,
      'a neighbour',
    );
    expect(deathLinesOf(id)).to.have.length(1);
    expect(readHostEvents(sandbox).filter((e) => / Worker \d+ exited with /.test(e))).to.have.length(1);
    expect(await controllerRequests()).to.be.at.least(before + 13);
  });

  it('is quarantined at its third death within 10 s: 503 with Retry-After, not run, until its file is saved', async function () {
    // A killer of its own, so this test stands alone: three deaths within 10 s.
    write('Repeat.ts', "export default () => { process.kill(process.pid, 'SIGKILL'); };\n");
    const deaths = () => readHostEvents(sandbox).filter((e) => / Worker \d+ exited with /.test(e)).length;
    const deathsBefore = deaths();
    for (let round = 1; round <= 3; round++) await killBesideNeighbours(round, 'Repeat');
    const quarantined = await eventually(
      () => readHostEvents(sandbox).find((e) => e.includes('Controller Repeat is quarantined')),
      5000,
      'the quarantine line',
    );
    expect(quarantined, readHostEvents(sandbox).join('\n')).to.match(
      /\[error\] \[req -\] Controller Repeat is quarantined: 3 worker deaths within 10 s caused by its calls;/,
    );
    expect(deaths() - deathsBefore).to.equal(3);
    const refused = await killBesideNeighbours(4, 'Repeat');
    expect(refused.status).to.equal(503);
    expect(Number(refused.headers['retry-after'])).to.be.within(1, 30);
    // Not run: no fourth death, however long one waits for the table of workers to settle.
    await eventually(
      async () => ((await get(stack.url, '/External/Neighbour?n=settled')).status === 200 ? true : undefined),
      5000,
      'a neighbour',
    );
    expect(deaths() - deathsBefore).to.equal(3);
    write('Repeat.ts', "export default () => 'mended';\n");
    const mended = await eventually(
      async () => {
        const reply = await get(stack.url, '/External/Repeat');
        return reply.status === 200 ? reply : undefined;
      },
      5000,
      'the controller running again',
    );
    expect(mended.body).to.equal('mended');
  });
});

describe('per-controller counters across deaths (--max-execution-time 2)', function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Hello.ts'), "export default () => 'hello';\n");
    // Blocks its worker until the watchdog kills it at the limit.
    writeFileSync(join(sandbox.controllers, 'Spin.ts'), 'export default () => { for (;;); };\n');
    stack = await startStack(sandbox, ['--workers', '2', '--max-execution-time', '2']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  const helloRequests = async () =>
    total((await get(stack.url, '/metrics')).body, 'extqs_host_controller_requests_total', { controller: 'Hello' }) ?? 0;
  const lineOf = (pattern: RegExp, what: string) => eventually(() => readHostEvents(sandbox).find((e) => pattern.test(e)), 10_000, what);

  it('never go back: while a worker does not answer, after the watchdog kills it, after a SIGKILL from outside', async function () {
    // Both workers count some: the proxy sends each request to the least busy.
    await Promise.all(Array.from({ length: 20 }, () => get(stack.url, '/External/Hello')));
    expect(await helloRequests()).to.equal(20);
    const spinning = get(stack.url, '/External/Spin');
    const blocked = await lineOf(/ Worker \d+ is blocked /, 'the blocked worker');
    const pid = Number(/ Worker (\d+) is blocked /.exec(blocked)![1]);
    expect(await helloRequests(), 'while a worker does not answer').to.equal(20);
    expect((await spinning).status).to.equal(504);
    await lineOf(new RegExp(`Worker ${pid} exited with signal SIGKILL; .* Cause: the execution-limit kill`), 'the watchdog kill');
    expect(await helloRequests(), 'after the watchdog killed it').to.equal(20);
    const ready = readHostEvents(sandbox).flatMap((e) => / Worker (\d+) ready/.exec(e)?.[1] ?? []);
    const victim = Number(ready.find((each) => Number(each) !== pid));
    process.kill(victim, 'SIGKILL');
    await lineOf(new RegExp(`Worker ${victim} exited with signal SIGKILL; .* Cause: no known cause`), 'the outside kill');
    expect(await helloRequests(), 'after a SIGKILL from outside').to.equal(20);
  });
});

describe('a spare worker (--workers 1 --spare-workers 1)', function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Pid.ts'), 'export default () => String(process.pid);\n');
    writeFileSync(join(sandbox.controllers, 'Killer.ts'), "export default () => { process.kill(process.pid, 'SIGKILL'); };\n");
    stack = await startStack(sandbox, ['--workers', '1', '--spare-workers', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  const sparePids = () => readHostEvents(sandbox).flatMap((e) => / Worker (\d+) is spare/.exec(e)?.[1] ?? []);
  const loadedIn = (pid: string) =>
    readHostEvents(sandbox).filter((e) => e.includes(`Loaded controller Pid from`) && e.includes(`in worker ${pid} `));

  it('takes a dead worker’s place with the controllers in use loaded, and its own replacement starts behind it', async function () {
    const [spare] = await eventually(() => (sparePids().length > 0 ? sparePids() : undefined), 10_000, 'the spare');
    const first = await get(stack.url, '/External/Pid');
    expect(first.status).to.equal(200);
    expect(first.body).not.to.equal(spare);
    // The spare loads what the pool serves.
    await eventually(() => (loadedIn(spare).length > 0 ? true : undefined), 5000, 'Pid loaded in the spare');
    expect((await get(stack.url, '/External/Killer')).status).to.equal(500);
    const next = await get(stack.url, '/External/Pid');
    expect(next.status).to.equal(200);
    expect(next.body, 'served by the spare').to.equal(spare);
    expect(loadedIn(spare), 'loaded once, before it served').to.have.length(1);
    await eventually(() => (sparePids().length === 2 ? true : undefined), 10_000, 'a new spare');
  });

  // The issue's target is 50 ms from the death being seen; wall-clock is the bench's to judge, so this logs the figure
  // (from the killer's answer to the next request's) and bounds it only generously.
  it('serves the next request after a death from the spare, each time (the delay logged)', async function () {
    const delays: number[] = [];
    for (let round = 1; round <= 3; round++) {
      // A killer of its own each round: a third death of one controller within 10 s would quarantine it.
      writeFileSync(join(sandbox.controllers, `Killer${round}.ts`), "export default () => { process.kill(process.pid, 'SIGKILL'); };\n");
      const spares = await eventually(() => (sparePids().length >= round + 1 ? sparePids() : undefined), 10_000, 'a spare');
      const spare = spares[spares.length - 1];
      expect((await get(stack.url, '/External/Pid')).body).not.to.equal(spare);
      await eventually(() => (loadedIn(spare).length > 0 ? true : undefined), 5000, 'Pid loaded in the spare');
      expect((await get(stack.url, `/External/Killer${round}`)).status).to.equal(500);
      const seen = performance.now();
      const next = await get(stack.url, '/External/Pid');
      delays.push(performance.now() - seen);
      expect(`${next.status} ${next.body}`, 'served by the spare').to.equal(`200 ${spare}`);
    }
    console.log(`      the next request after a death, served by the spare: ${delays.map((ms) => `${ms.toFixed(1)} ms`).join(', ')}`);
    for (const ms of delays) expect(ms).to.be.below(1000);
  });
});
