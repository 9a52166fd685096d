// The proxy's view of a host's workers (proxy/workerRoutes.ts) against a real HTTP server on a unix socket: what
// it follows, and that a server answering anything else never breaks the proxy.
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { WorkerTable } from '../../common/protocol.ts';
import { HostWorkers, type WorkerTarget } from '../../proxy/workerRoutes.ts';
import { eventually } from '../helpers/stack.ts';

describe('following a host table of workers (proxy/workerRoutes.ts)', function () {
  let dir: string;
  let server: Server;
  let follower: HostWorkers | undefined;
  const answers: ServerResponse[] = [];

  async function serve(answer: (res: ServerResponse) => void): Promise<string> {
    const path = join(dir, 'host.sock');
    server = createServer((_req, res) => {
      answers.push(res);
      answer(res);
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

  it('follows nothing from a server that answers anything with 200, and keeps running', async function () {
    const path = await serve((res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>not a table</html>\n'));
    follower = new HostWorkers({ kind: 'unix', path }, { left: () => undefined });
    follower.follow();
    await eventually(() => (answers.length === 1 && answers[0].writableFinished ? true : undefined), 3000, 'the answer');
    expect(follower.pick()).to.equal(undefined);
  });
});
