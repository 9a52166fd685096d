// The proxy's view of a host's workers (proxy/forward/workerRoutes.ts) against a real HTTP server on a unix socket: what
// it follows, and that a server answering anything else never breaks the proxy.
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { WORKERS_PATH, type WorkerTable } from '../../common/protocol.ts';
import { HostWorkers, type WorkerTarget } from '../../proxy/forward/workerRoutes.ts';
import { eventually } from '../helpers/stack.ts';

describe('following a host table of workers (proxy/forward/workerRoutes.ts)', function () {
  let dir: string;
  let server: Server;
  let follower: HostWorkers | undefined;
  const answers: ServerResponse[] = [];

  async function serve(answer: (res: ServerResponse, req: IncomingMessage) => void, path = join(dir, 'host.sock')): Promise<string> {
    server = createServer((req, res) => {
      answers.push(res);
      answer(res, req);
    });
    server.listen(path);
    await once(server, 'listening');
    return path;
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'extqs-routes-'));
    answers.length = 0;
  });
  afterEach(async function () {
    follower?.close();
    follower = undefined;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const table = (workers: WorkerTable['workers'], exited: number[] = [], culprits: Record<string, string> = {}): string =>
    `${JSON.stringify({ concurrency: 0, workers, exited, culprits } satisfies WorkerTable)}\n`;

  it('sends to the least busy worker listed, none blocked, and learns which left and why', async function () {
    const path = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(
        table([
          { pid: 1, socket: '/w1.sock', blocked: false, running: [] },
          { pid: 2, socket: '/w2.sock', blocked: true, running: ['r1'] },
        ]),
      );
    });
    const left: WorkerTarget[] = [];
    follower = new HostWorkers({ kind: 'unix', path }, { left: (target) => left.push(target) });
    follower.follow();
    const first = await eventually(() => follower!.pick(), 3000, 'a worker');
    expect(first.pid, 'the blocked one is never chosen').to.equal(1);
    answers[0].write(table([], [1]));
    await eventually(() => (left.length === 2 ? true : undefined), 3000, 'both workers left');
    expect(await first.fateWithin(100), 'listed among the exited').to.deep.equal({ died: true, culprit: undefined });
    expect(await left.find((target) => target.pid === 2)!.fateWithin(100), 'not listed: it retired').to.deep.equal({ died: false });
    expect(follower.pick()).to.equal(undefined);
  });

  it('learns the request that caused a death with a known cause', async function () {
    const path = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(table([{ pid: 7, socket: '/w7.sock', blocked: false, running: [] }]));
    });
    follower = new HostWorkers({ kind: 'unix', path }, { left: () => undefined });
    follower.follow();
    const worker = await eventually(() => follower!.pick(), 3000, 'a worker');
    answers[0].write(table([], [7], { 7: 'req-1' }));
    expect(await worker.fateWithin(3000)).to.deep.equal({ died: true, culprit: 'req-1' });
  });

  it('sends to the least busy of the workers that are not blocked, not merely the first, and to another than the one left out', async function () {
    const path = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(
        table([
          { pid: 1, socket: '/w1.sock', blocked: false, running: [] },
          { pid: 2, socket: '/w2.sock', blocked: true, running: [] },
          { pid: 3, socket: '/w3.sock', blocked: false, running: [] },
          { pid: 4, socket: '/w4.sock', blocked: false, running: [] },
        ]),
      );
    });
    follower = new HostWorkers({ kind: 'unix', path }, { left: () => undefined });
    follower.follow();
    const first = await eventually(() => follower!.pick(), 3000, 'a worker');
    expect(first.pid, 'all idle: the first listed').to.equal(1);
    const sent = (worker: WorkerTarget, count: number) => {
      for (let i = 0; i < count; i++) worker.sent.add({ requestId: `r${worker.pid}-${i}`, reroute: () => undefined });
    };
    sent(first, 2);
    const next = follower.pick()!;
    expect(next.pid, 'the idle worker after the busy one, past the blocked one').to.equal(3);
    sent(next, 1);
    expect(follower.pick()!.pid).to.equal(4);
    expect(follower.pick(follower.pick())!.pid, 'not the one left out: the next least busy').to.equal(3);
  });

  const w = (pid: number, blocked = false, running: string[] = []) => ({ pid, socket: `/w${pid}.sock`, blocked, running });
  /** A table server whose answers the test writes: `tables(i)` is the ith request's response. */
  const follow = async (first: string) => {
    const path = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(first);
    });
    const left: WorkerTarget[] = [];
    follower = new HostWorkers({ kind: 'unix', path }, { left: (target) => left.push(target) });
    follower.follow();
    return left;
  };
  /** Resolves when the follower's request `index` has closed its connection. */
  const closed = (index: number) => eventually(() => (answers[index]?.closed ? true : undefined), 3000, `request ${index} closed`);

  it('asks the primary for WORKERS_PATH with Host localhost, over TCP too, and names each worker by its socket', async function () {
    let asked: IncomingMessage | undefined;
    server = createServer((req, res) => {
      asked = req;
      answers.push(res);
      res.writeHead(200).write(table([w(7)]));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    follower = new HostWorkers({ kind: 'tcp', host: '127.0.0.1', port }, { left: () => undefined });
    follower.follow();
    const worker = await eventually(() => follower!.pick(), 3000, 'a worker');
    expect([asked?.url, asked?.headers.host]).to.deep.equal([WORKERS_PATH, 'localhost']);
    expect(worker.upstream).to.deep.equal({ kind: 'unix', path: '/w7.sock' });
    expect(await worker.fateWithin(1), 'still listed').to.equal(undefined);
  });

  it('keeps each worker it knows from one table to the next, and reads two tables written at once in order', async function () {
    await follow(table([w(1)]));
    const first = await eventually(() => follower!.pick(), 3000, 'a worker');
    answers[0].write(table([w(1), w(2)]) + table([w(2), w(1)]));
    await eventually(() => (follower!.pick()?.pid === 2 ? true : undefined), 3000, 'the second table, worker 2 listed first');
    const second = follower!.pick()!;
    expect(follower!.pick(second), 'worker 1 is the object it was').to.equal(first);
    expect(first.accepting).to.equal(true);
  });

  it('sends nothing straight to a worker when the host bounds its concurrency: all goes through the primary', async function () {
    await follow(`${JSON.stringify({ concurrency: 2, workers: [w(1)], exited: [] })}\n`);
    await eventually(() => (answers.length === 1 ? true : undefined), 3000, 'the request');
    answers[0].write(table([w(3)]));
    await eventually(() => follower!.pick(), 3000, 'a worker once the bound is 0');
    answers[0].write(`${JSON.stringify({ concurrency: 2, workers: [w(3)], exited: [] })}\n`);
    await eventually(() => (follower!.pick() === undefined ? true : undefined), 3000, 'none once bounded again');
  });

  it('sends again elsewhere what a worker that just blocked holds and never started, once, and not what it runs', async function () {
    await follow(table([w(1), w(2)]));
    const one = await eventually(() => follower!.pick(), 3000, 'a worker');
    const rerouted: string[] = [];
    for (const requestId of ['running', 'waiting']) one.sent.add({ requestId, reroute: () => rerouted.push(requestId) });
    answers[0].write(table([w(1, true, ['running']), w(2)]));
    await eventually(() => (rerouted.length > 0 ? true : undefined), 3000, 'the reroute');
    expect(rerouted).to.deep.equal(['waiting']);
    expect(follower!.pick()!.pid, 'the blocked one is passed over').to.equal(2);
    // Still blocked in the next table: nothing is sent again twice. Unblocked: chosen again.
    answers[0].write(table([w(1, true, ['running']), w(2)]) + table([w(1), w(2)]));
    await eventually(() => (one.blocked ? undefined : true), 3000, 'unblocked');
    expect(follower!.pick(follower!.pick()), 'chosen again').to.equal(one);
    expect(rerouted).to.deep.equal(['waiting']);
  });

  it('leaves a worker out that could not be reached, telling which, until a table lists it again', async function () {
    const left = await follow(table([w(1), w(2)]));
    const one = await eventually(() => follower!.pick(), 3000, 'a worker');
    follower!.unreachable(one);
    expect(left).to.deep.equal([one]);
    expect(one.accepting).to.equal(false);
    expect(follower!.pick()!.pid).to.equal(2);
    expect(follower!.pick(follower!.pick())).to.equal(undefined);
    follower!.unreachable(one);
    expect(left, 'told once').to.have.length(1);
    expect(await one.fateWithin(1), 'not known to have died').to.deep.equal({ died: false });
    answers[0].write(table([w(1), w(2)]));
    const again = await eventually(() => (follower!.pick()?.pid === 1 ? follower!.pick() : undefined), 3000, 'worker 1 listed again');
    expect([again.pid, again === one], 'a new target for it, taking requests').to.deep.equal([1, false]);
  });

  for (const [what, line] of [
    ['a line without exited', JSON.stringify({ concurrency: 0, workers: [w(1)] })],
    ['a line without workers', JSON.stringify({ concurrency: 0, exited: [] })],
    ['a line whose concurrency is no number', JSON.stringify({ concurrency: '0', workers: [w(1)], exited: [] })],
    ['an empty line', ''],
    ['null', 'null'],
  ])
    it(`stops following a server that sends ${what} after a table, and routes through the primary`, async function () {
      await follow(table([w(1)]));
      await eventually(() => follower!.pick(), 3000, 'a worker');
      answers[0].write(`${line}\n`);
      await closed(0);
      expect(follower!.pick()).to.equal(undefined);
    });

  it('reads no table from an answer other than 200, whatever its body', async function () {
    const path = await serve((res) => res.writeHead(404).end(table([w(1)])));
    follower = new HostWorkers({ kind: 'unix', path }, { left: () => undefined });
    follower.follow();
    await closed(0);
    expect(follower.pick()).to.equal(undefined);
  });

  it('follows again after the table breaks off, routing through the primary meanwhile, and after a first failed attempt', async function () {
    const path = join(dir, 'host.sock');
    const left: WorkerTarget[] = [];
    // Nobody listens yet: the attempt fails quietly and is made again.
    follower = new HostWorkers({ kind: 'unix', path }, { left: (target) => left.push(target) });
    follower.follow();
    await serve((res) => {
      res.writeHead(200);
      res.write(table([w(answers.length)]));
    }, path);
    const first = await eventually(() => follower!.pick(), 5000, 'a worker after a failed attempt');
    answers[answers.length - 1].end();
    await eventually(() => (left.includes(first) ? true : undefined), 3000, 'the worker left with the table');
    expect(await first.fateWithin(1), 'not listed as exited: it retired').to.deep.equal({ died: false });
    await eventually(() => (follower!.pick() && follower!.pick() !== first ? true : undefined), 5000, 'the next table');
  });

  it('stops following at close(), ending its request', async function () {
    await follow(table([w(1)]));
    await eventually(() => follower!.pick(), 3000, 'a worker');
    follower!.close();
    await closed(0);
    expect(follower!.pick()).to.equal(undefined);
  });

  it('follows nothing from a server that answers anything with 200, and keeps running', async function () {
    const path = await serve((res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>not a table</html>\n'));
    follower = new HostWorkers({ kind: 'unix', path }, { left: () => undefined });
    follower.follow();
    await eventually(() => (answers.length === 1 && answers[0].writableFinished ? true : undefined), 3000, 'the answer');
    expect(follower.pick()).to.equal(undefined);
  });
});
