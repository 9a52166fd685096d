// What the host's primary process and its workers say to each other over the cluster IPC channel.
import type { PoolStatus, WorkerSnapshot } from './stats.ts';

export type ToPrimary =
  /** The worker wants to be replaced (max requests reached, or a controller overran its limit). */
  | { type: 'retire-me'; reason: string }
  /** A /status request on this worker: the primary gathers every worker's snapshot. */
  | { type: 'status?'; id: number; full: boolean }
  | { type: 'stats'; id: number; snapshot: WorkerSnapshot }
  /** A retiring worker's last counters, just before it exits. */
  | { type: 'final-stats'; snapshot: WorkerSnapshot };

export type ToWorker =
  /** Stop taking requests, finish those in flight, exit. */
  | { type: 'retire' }
  | { type: 'stats?'; id: number }
  | { type: 'status'; id: number; status: PoolStatus };
