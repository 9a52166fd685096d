// /status as the pool answers it (and its workers, asked for it): every live worker's counters, the departed
// ones', and php-fpm's pool fields.
import type { HostConfig } from '../../common/settings.ts';
import { summarize, type PoolFields, type PoolStatus, type WorkerSnapshot } from '../wire/stats.ts';
import type { Dispatcher } from './dispatcher.ts';
import type { PoolState } from './poolState.ts';

export async function poolStatus(pool: PoolState, full: boolean): Promise<PoolStatus> {
  const { workers, records, dispatcher, config } = pool;
  const live = workers.handles.flatMap((w) => records.of(w) ?? []).filter((r) => !r.handedOver);
  const snapshots = await Promise.all(live.map((r) => r.snapshot()));
  const fields = poolFields(
    snapshots,
    dispatcher,
    {
      pm: config.pm,
      processManagerSettings: pool.processManagerSettings,
      current: pool.settings.current,
      totalProcesses: workers.handles.length,
    },
    pool.figures,
  );
  return summarize(process.pid, pool.startedAt, snapshots, pool.departed, fields, full);
}

/**
 * php-fpm's pool fields; idle and active as the workers count themselves, since a proxy sends most requests straight
 * to them. `figures` keeps the most active workers ever seen.
 */
function poolFields(
  snapshots: readonly WorkerSnapshot[],
  dispatcher: Dispatcher,
  pool: { pm: HostConfig['pm']; processManagerSettings: string; current: HostConfig; totalProcesses: number },
  figures: { maxChildrenReached: number; maxActive: number },
): PoolFields {
  const active = snapshots.filter((s) => s.state === 'busy').length;
  figures.maxActive = Math.max(figures.maxActive, active, dispatcher.maxActive);
  return {
    processManager: pool.pm,
    processManagerSettings: pool.processManagerSettings,
    workerConcurrency: pool.current.workerConcurrency,
    listenQueue: dispatcher.queued,
    maxListenQueue: dispatcher.maxQueued,
    listenQueueLen: dispatcher.bound,
    idleProcesses: snapshots.filter((s) => s.state === 'idle').length,
    activeProcesses: active,
    blockedProcesses: dispatcher.serving().filter((slot) => slot.blocked).length,
    requestsInFlight: snapshots.reduce((sum, s) => sum + s.inFlight, 0),
    totalProcesses: pool.totalProcesses,
    maxActiveProcesses: figures.maxActive,
    maxChildrenReached: figures.maxChildrenReached,
  };
}
