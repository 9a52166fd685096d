// A worker's retirement: recycled (its replacement listens first) when it asks or stays busy past its request,
// and taken out of the table before it is told to leave.
import type { Worker } from 'node:cluster';
import type { WorkerSlot } from './dispatcher.ts';
import { idleWaitMs, type PoolState } from './poolState.ts';

/** Replaces a worker that asked to: the old one keeps serving until the new one listens, so no request finds nobody. */
export function recycle(pool: PoolState, worker: Worker, reason: string): void {
  const { workers } = pool;
  if (workers.stopped || workers.isRetiring(worker)) return;
  pool.log.info(`Recycling worker ${worker.process.pid} (${reason}): starting its replacement first`);
  workers.recycle(worker);
}

/** Sent nothing more, then told to leave once its request (if any) ends; its successor, if any, listens. */
export function takeOutOfTable(pool: PoolState, worker: Worker): void {
  const record = pool.records.of(worker);
  if (record) pool.dispatcher.remove(record.slot);
  // The proxies first: they stop sending it requests and close their connections to it as they end.
  pool.feed.publish();
  record?.channel.notify('retire', null);
}

/** Resolves once the worker behind `slot` runs nothing; one still busy past idleWaitMs() is recycled. */
export function whenIdle(pool: PoolState, slot: WorkerSlot): Promise<void> {
  const record = pool.records.ofSlot(slot);
  if (!record) return Promise.reject(new Error('gone'));
  return record.channel.request('idle', null, idleWaitMs(pool)).then(
    () => undefined,
    (err: NodeJS.ErrnoException) => {
      // Only one that did not answer in time is recycled. A send that failed (EPIPE: killed by its watchdog,
      // not yet reaped) or a closed channel means it is dying; its exit is handled where it exits.
      if (err.code === undefined && pool.workers.handles.includes(record.worker) && record.worker.isConnected())
        recycle(pool, record.worker, `still busy ${idleWaitMs(pool)} ms after its request ended: ${err.message}`);
      throw err;
    },
  );
}
