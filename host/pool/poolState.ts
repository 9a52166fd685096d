// The pool's state in one object, passed to each of its steps (host/pool/pool.ts wires them): the settings as read
// now, the workers and their records, the dispatcher, the table the proxies follow, the spares, the quarantine and
// the counters; and the questions the steps ask of it.
import type { Worker } from 'node:cluster';
import type { HostConfig } from '../../common/settings.ts';
import type { Supervisor } from '../../common/supervisor.ts';
import type { Departed } from '../wire/stats.ts';
import type { Dispatcher } from './dispatcher.ts';
import type { PrimaryHostLog } from './hostLogFile.ts';
import { belowConcurrency, idleLongestFirst, type IdleWorker } from './pmPolicy.ts';
import type { PoolWorker, PoolWorkers } from './poolWorker.ts';
import type { Quarantine } from './quarantine.ts';
import type { Spares } from './spares.ts';
import type { WorkersFeed } from './workersFeed.ts';

/**
 * The settings a worker started from now on is given: a reload changes `current`. Until the workers are there a
 * reload changes `current` alone; from then on `applyToWorkers` (the pool's reload step) follows.
 */
export interface LiveSettings {
  current: HostConfig;
  applyToWorkers?: (previous: HostConfig) => void;
}

export interface PoolState {
  /** As started: what a reload does not change (--pm, the socket, the www directory) is read here. */
  readonly config: HostConfig;
  readonly settings: LiveSettings;
  readonly log: PrimaryHostLog;
  /** Each worker's private socket, in a directory only this user can enter. */
  readonly socketDir: string;
  /** Numbers the workers' sockets. */
  socketSerial: number;
  readonly startedAt: string;
  /** The handles are cluster workers; the events are host.log's lines and /status's counters. */
  readonly workers: Supervisor<Worker, void>;
  readonly records: PoolWorkers;
  readonly dispatcher: Dispatcher;
  readonly feed: WorkersFeed;
  readonly spares: Spares;
  readonly quarantine: Quarantine;
  /**
   * Counters of workers gone: a retiring worker's final stats, or what a crashed one last reported, so no total
   * ever falls below what /status (and so Prometheus) has been shown.
   */
  readonly departed: Departed;
  readonly figures: { maxChildrenReached: number; maxActive: number };
  /** php-fpm warns once until the pool has room again. */
  warnedMaxChildren: boolean;
  /** /status's `process manager settings`, described again after a reload. */
  processManagerSettings: string;
  /** php-fpm's maintenance: the workers it may start at once, and whether a tick runs (maintenance.ts). */
  readonly maintenance: { spawnRate: number; running: boolean };
  /** The maintenance and the spares' preload, once a second after the pool listens; cleared when it stops. */
  timers: (NodeJS.Timeout | undefined)[];
}

/** Workers that take or will take requests: neither retiring nor stopped. */
export function serving(pool: PoolState): Worker[] {
  return pool.workers.handles.filter((w) => !pool.workers.isRetiring(w));
}

export function servingRecords(pool: PoolState): PoolWorker[] {
  return serving(pool).flatMap((w) => pool.records.of(w) ?? []);
}

export function starting(pool: PoolState): number {
  return servingRecords(pool).filter((w) => !w.up).length;
}

/** Workers below --worker-concurrency (all of them when it is 0): Passenger starts another only when none is. */
export function available(pool: PoolState): number {
  return pool.dispatcher.serving().filter((slot) => belowConcurrency(slot, pool.settings.current.workerConcurrency)).length;
}

/** Workers running nothing, the one idle longest first (ondemand and dynamic stop those first). */
export function idle(pool: PoolState): IdleWorker<PoolWorker>[] {
  return idleLongestFirst(
    pool.dispatcher.serving().map((slot) => {
      const record = pool.records.ofSlot(slot)!;
      return { worker: record, inFlight: slot.inFlight, blocked: slot.blocked, idleSince: slot.idleSince, quiet: record.quiet?.since };
    }),
  );
}

/** Every worker, spares too: one takes a place with what every worker knows. */
export function everyWorker(pool: PoolState): PoolWorker[] {
  return [...pool.workers.handles.flatMap((w) => pool.records.of(w) ?? []), ...pool.spares.workers];
}

/** A request whose controller outlives its answer keeps its worker busy at most this long. */
export function idleWaitMs(pool: PoolState): number {
  return (pool.settings.current.maxExecutionTime || 30) * 1000 + 15_000;
}
