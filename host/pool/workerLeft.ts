// A worker that left the pool (exited, or stopped): what it ran, its counters, its uploads, and once its watchdog
// pipe is read its death line and its end, which the relay's requests that died with it wait for.
import type { Worker } from 'node:cluster';
import { rm } from 'node:fs/promises';
import { removeTempDirsOf } from '../../common/tempDirs.ts';
import type { WorkerEnd } from '../../common/workerLoss.ts';
import { addDeparted } from '../wire/stats.ts';
import type { WorkerSlot } from './dispatcher.ts';
import type { PoolState } from './poolState.ts';
import { workerDied } from './quarantineNotices.ts';

/**
 * The most a worker's exit waits for the end of its watchdog pipe, whose last line may say why it died: the pipe
 * ends with the process, unless a child it spawned holds it open.
 */
const DRAIN_MS = 200;
/** How long the primary's relay waits for a worker whose connection failed to be seen exiting (proxy: WORKER_EXIT_WAIT_MS). */
const FATE_WAIT_MS = 1_000;

/** A worker left the pool (exited, or stopped): what it ran, its counters, its death line once its pipe is read. */
export function workerLeft(pool: PoolState, worker: Worker, how: string, was: string): void {
  const { dispatcher, feed, departed, log, workers } = pool;
  const record = pool.records.of(worker);
  const slot = record?.slot;
  // What it ran failed with its connection; what waits in the queue does not. What it was relaying is read
  // before it is forgotten: the death line says what became of each.
  const relayed = slot ? [...slot.running] : [];
  if (slot) dispatcher.gone(slot);
  const unasked = was === 'ready' && !workers.stopped;
  feed.draining += 1;
  const late = new Promise<void>((resolve) => setTimeout(resolve, DRAIN_MS).unref());
  void Promise.race([record?.pipeEnded, late]).then(() => {
    feed.draining -= 1;
    const cause = record?.deathCause;
    if (record && slot) {
      if (unasked) feed.exited(slot.pid, cause?.requestId);
      record.end().settle(unasked ? { died: true, culprit: cause?.requestId } : undefined);
      feed.publish();
      rm(slot.socketPath, { force: true }).catch(() => undefined);
    }
    const delay = record?.exitDelay;
    if (delay !== undefined) workerDied(pool, { pid: worker.process.pid, how, delay, cause, relayed, blocked: slot?.blockedRunning ?? [] });
  });
  const last = record?.lastReported;
  if (last) addDeparted(departed, last);
  // A worker killed mid-request could not delete that request's uploads.
  const pid = worker.process.pid;
  if (pid !== undefined)
    removeTempDirsOf('upload', pid).catch((err: Error) => log.error(`Could not delete the uploads of worker ${pid}: ${err.message}`));
  if (was === 'retiring' && !workers.stopped && !record?.reaped) departed.restarts.recycled += 1;
}

/** A ready worker exited unasked; its line waits for its watchdog pipe's last lines (workerLeft()). */
export function workerExited(pool: PoolState, worker: Worker, delay: number): void {
  pool.departed.restarts.exited += 1;
  const record = pool.records.of(worker);
  if (record) record.exitDelay = delay;
}

/** How the worker behind `slot` ended, once its exit is handled; undefined if it is not seen exiting in time. */
export function fateOf(pool: PoolState, slot: WorkerSlot): Promise<WorkerEnd> {
  const wait = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), FATE_WAIT_MS).unref());
  return Promise.race([pool.records.ofSlot(slot)!.end().promise, wait]);
}
