// php-fpm's process manager, the decisions alone: how many workers a pool starts with, when it starts another,
// when it stops an idle one, how it is resized after a SIGHUP, how many spares (--spare-workers) it keeps. Pure:
// it decides from the counts, the settings and the time it is given; host/pool/maintenance.ts and poolReload.ts carry them out.
// (--max-requests is the worker's own count: host/worker/worker.ts asks to be recycled.)
import type { HostConfig, PmMode } from '../../common/settings.ts';

/** php-fpm spawns at most this many workers a second in dynamic mode, doubling up to it. */
export const MAX_SPAWN_RATE = 32;

/** The settings the decisions read; --pm is the pool's own (it needs a restart), the others are read live. */
export type PmSettings = Pick<
  HostConfig,
  'workers' | 'startWorkers' | 'minSpareWorkers' | 'maxSpareWorkers' | 'workerIdleTimeout' | 'workerConcurrency' | 'spareWorkers'
>;

/** Workers a pool starts with: static --workers, dynamic --start-workers, ondemand none (requests start them). */
export function initialWorkers(pm: PmMode, settings: Pick<PmSettings, 'workers' | 'startWorkers'>): number {
  return pm === 'static' ? settings.workers : pm === 'dynamic' ? settings.startWorkers : 0;
}

/** Whether the pool runs php-fpm's maintenance (once a second): a static pool has nothing to start or stop. */
export function maintains(pm: PmMode): boolean {
  return pm !== 'static';
}

/** The readiness probe's answer: a worker can take a request now (`available` of them), or ondemand starts one. */
export function canTakeRequest(pm: PmMode, available: number): boolean {
  return pm === 'ondemand' || available > 0;
}

/** Whether a worker takes another request: below --worker-concurrency (always when it is 0), and not blocked. */
export function belowConcurrency(worker: { blocked: boolean; inFlight: number }, workerConcurrency: number): boolean {
  return !worker.blocked && (workerConcurrency === 0 || worker.inFlight < workerConcurrency);
}

/** What the pool does about a request that found no worker free. */
export type OnWaiting = 'nothing' | 'start' | 'at max children';

/**
 * A request waits for a worker: ondemand starts one per waiting request that no starting worker will take, up to
 * --workers; the other modes wait for their maintenance.
 */
export function onWaiting(pm: PmMode, counts: { starting: number; queued: number; serving: number; workers: number }): OnWaiting {
  if (pm !== 'ondemand') return 'nothing';
  if (counts.starting > counts.queued) return 'nothing';
  if (counts.serving >= counts.workers) return 'at max children';
  return 'start';
}

/** A worker running nothing, since when (performance.now() ms), and whether it may take a request (not blocked). */
export interface IdleWorker<W> {
  worker: W;
  since: number;
  available: boolean;
}

/**
 * Since when a worker has run nothing, as it says of itself: a proxy sends requests straight to it, past the
 * primary, so a snapshot whose count moved (or that runs something) starts its quiet time again at `now`.
 */
export function quietSince(
  last: { requests: number; since: number } | undefined,
  snapshot: { requests: number; inFlight: number },
  now: number,
): { requests: number; since: number } {
  if (snapshot.inFlight > 0 || !last || last.since === Infinity || last.requests !== snapshot.requests)
    return { requests: snapshot.requests, since: snapshot.inFlight > 0 ? Infinity : now };
  return last;
}

/**
 * The workers that run nothing, idle longest first (ondemand and dynamic stop those first): each is idle since the
 * later of what the primary saw (its relay) and what the worker said (`quiet`).
 */
export function idleLongestFirst<W>(
  workers: { worker: W; inFlight: number; blocked: boolean; idleSince: number; quiet: number | undefined }[],
): IdleWorker<W>[] {
  return workers
    .filter((w) => w.inFlight === 0)
    .map((w) => ({ worker: w.worker, since: Math.max(w.idleSince, w.quiet ?? 0), available: !w.blocked }))
    .filter(({ since }) => since !== Infinity)
    .sort((a, b) => a.since - b.since);
}

export interface MaintenanceInput<W> {
  pm: PmMode;
  settings: PmSettings;
  /** performance.now() */
  now: number;
  /** idleLongestFirst() of the serving workers. */
  idle: IdleWorker<W>[];
  /** Serving workers below --worker-concurrency and not blocked (belowConcurrency()). */
  available: number;
  /** Serving workers not yet listening. */
  starting: number;
  /** Workers that take or will take requests (neither retiring nor stopped). */
  serving: number;
  /** Workers dynamic mode starts at most this time (1, doubled each time it is short, up to MAX_SPAWN_RATE). */
  spawnRate: number;
}

export interface MaintenanceDecision<W> {
  /** An idle worker to stop, and why (for its log line). */
  stop?: { worker: W; why: string };
  /** Workers to start now. */
  start: number;
  /** The pool wanted a worker and is at --workers (php-fpm's max_children warning). */
  atMaxChildren: boolean;
  /** The pool has room again: the max_children warning may be given again. */
  hasRoom: boolean;
  /** The spawn rate of the next maintenance. */
  spawnRate: number;
}

/** php-fpm's maintenance, once a second: what a dynamic or ondemand pool starts or stops now. */
export function maintenance<W>(input: MaintenanceInput<W>): MaintenanceDecision<W> {
  const { settings, idle, spawnRate } = input;
  const decision: MaintenanceDecision<W> = { start: 0, atMaxChildren: false, hasRoom: false, spawnRate };
  if (input.pm === 'static') return decision;
  if (input.pm === 'ondemand') {
    // The one idle longest, past the timeout (php-fpm stops one a second).
    const oldest = idle[0];
    const stops = oldest !== undefined && input.now - oldest.since > settings.workerIdleTimeout * 1000;
    if (stops) decision.stop = { worker: oldest.worker, why: `idle more than ${settings.workerIdleTimeout} s` };
    // Room is counted without the worker it stops.
    decision.hasRoom = input.available - (stops && oldest.available ? 1 : 0) > 0;
    return decision;
  }
  // dynamic
  if (idle.length > settings.maxSpareWorkers) {
    decision.stop = { worker: idle[0].worker, why: `more than ${settings.maxSpareWorkers} idle` };
    decision.spawnRate = 1;
    return decision;
  }
  // Spare: below the concurrency limit (idle, at one request a worker, as php-fpm counts it).
  const spare = input.available + input.starting;
  if (spare >= settings.minSpareWorkers) return { ...decision, spawnRate: 1, hasRoom: true };
  const room = settings.workers - input.serving;
  if (room <= 0) return { ...decision, atMaxChildren: true };
  decision.start = Math.min(spawnRate, settings.minSpareWorkers - spare, room);
  decision.spawnRate = Math.min(spawnRate * 2, MAX_SPAWN_RATE);
  return decision;
}

/**
 * After a SIGHUP with a new --workers: the workers past it are stopped, idle ones first, and a static pool below it
 * starts the rest. `serving` is in the pool's order (the oldest first).
 */
export function resize<W>(pm: PmMode, workers: number, serving: W[], idle: ReadonlySet<W>): { stop: W[]; start: number } {
  const byIdleFirst = [...serving].sort((a, b) => Number(idle.has(b)) - Number(idle.has(a)));
  return { stop: byIdleFirst.slice(workers), start: pm === 'static' ? Math.max(0, workers - serving.length) : 0 };
}

/** Spares to start so that `spares` (listening or not) reach --spare-workers. */
export function sparesToStart(spares: number, spareWorkers: number): number {
  return Math.max(0, spareWorkers - spares);
}

/** The listening spares past --spare-workers, the last ones: they are stopped. */
export function sparesToStop<W>(listening: readonly W[], spareWorkers: number): W[] {
  return listening.slice(spareWorkers);
}

/** A spare that starts listening is kept unless there are more than --spare-workers (the setting went down). */
export function keepsSpare(spares: number, spareWorkers: number): boolean {
  return spares <= spareWorkers;
}
