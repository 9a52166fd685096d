// What the host's primary process and its workers say to each other over the cluster IPC channel.
import type { HostEntry } from '../common/logFormat.ts';
import type { PoolStatus, WorkerSnapshot } from './stats.ts';

/** A host.log event on its way from a worker to the primary, the one writer of the file. */
export type WireHostEntry = Omit<HostEntry, 'time'> & { time: number };

export type ToPrimary =
  /** The worker wants to be replaced (max requests reached, or a controller overran its limit). */
  | { type: 'retire-me'; reason: string }
  /** A /status request on this worker: the primary gathers every worker's snapshot. */
  | { type: 'status?'; id: number; full: boolean }
  | { type: 'stats'; id: number; snapshot: WorkerSnapshot }
  /** A retiring worker's last counters, just before it exits. */
  | { type: 'final-stats'; snapshot: WorkerSnapshot }
  /** host.log events; with `flush`, the worker waits for 'log-flushed' with that id (it is about to exit). */
  | { type: 'log'; entries: WireHostEntry[]; flush?: number };

export type ToWorker =
  /** Stop taking requests, finish those in flight, exit. */
  | { type: 'retire' }
  | { type: 'stats?'; id: number }
  | { type: 'status'; id: number; status: PoolStatus }
  | { type: 'log-flushed'; id: number }
  /** host.log's layout now (SIGHUP may change it): the execution-limit watchdog writes its line itself. */
  | { type: 'log-format'; json: boolean };
