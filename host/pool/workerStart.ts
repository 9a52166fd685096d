// A worker's start: forked on a private socket of its own and listened to (workerMessages.ts); a spare, when one
// listens, takes the place at once instead.
import cluster, { type Worker } from 'node:cluster';
import { join } from 'node:path';
import type { Launched } from '../../common/supervisor.ts';
import { WorkerSlot } from './dispatcher.ts';
import type { PoolState } from './poolState.ts';
import { PoolWorker } from './poolWorker.ts';
import { listenTo } from './workerMessages.ts';

/** Forks a worker on a private socket of its own, and listens to what it says. */
export function forkWorker(pool: PoolState): PoolWorker {
  const worker = cluster.fork();
  const record = pool.records.add(
    new PoolWorker(worker, new WorkerSlot(worker.process.pid ?? 0, join(pool.socketDir, `w${++pool.socketSerial}.sock`))),
  );
  listenTo(pool, record);
  return record;
}

/** Starts a worker; it is ready once it says it listens on its socket. A spare takes the place at once. */
export function launchWorker(pool: PoolState): Launched<Worker, void> {
  const spare = pool.spares.take();
  if (spare) {
    pool.dispatcher.add(spare.slot);
    pool.feed.publish();
    pool.spares.startBehind();
    return { handle: spare.worker, process: spare.worker.process, ready: Promise.resolve() };
  }
  const record = forkWorker(pool);
  const { worker } = record;
  const ready = new Promise<void>((resolve, reject) => {
    record.listened = resolve;
    worker.once('exit', () => reject(new Error(`worker ${worker.process.pid} exited before listening`)));
  });
  return { handle: worker, process: worker.process, ready };
}
