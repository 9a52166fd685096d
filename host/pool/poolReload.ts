// A SIGHUP: the settings read again. host.log reopened with them; once the workers are there, each is replaced by
// one started with a limit it reads at its start, and the pool's bounds (--workers, the spare bounds, the idle
// timeout, --listen-backlog), read live, resize it.
import { describeProcessManager, describeSettings, sliceFor } from '../../common/config.ts';
import { sighupLine, workersReplacedFor } from '../../common/reloadResolver.ts';
import type { HostConfig } from '../../common/settings.ts';
import type { PrimaryHostLog } from './hostLogFile.ts';
import { resize } from './pmPolicy.ts';
import { idle, serving, type LiveSettings, type PoolState } from './poolState.ts';
import { recycle } from './workerRetire.ts';

/** The settings a reload gives: host.log reopened and told, then the workers, once they are there. */
export function reloadSettings(live: LiveSettings, log: PrimaryHostLog, settings: HostConfig, note: string, kept: boolean): void {
  const previous = live.current;
  live.current = settings;
  const reopened = log.reopen(settings);
  log[kept ? 'error' : 'notice'](sighupLine([reopened && 'host.log'], note));
  log.info(`Settings: ${describeSettings(sliceFor('host', settings))}`);
  live.applyToWorkers?.(previous);
}

/** The workers follow new settings: renewed if a limit they read at their start changed, the pool fitted to its bounds. */
export function applyToWorkers(pool: PoolState, previous: HostConfig): void {
  // A limit a worker reads at its start: each is replaced by one started with it, which listens first.
  if (workersReplacedFor('host-pool', previous, pool.settings.current)) renewWorkers(pool);
  // The pool's bounds (--workers, the spare bounds, the idle timeout, --listen-backlog) are read live.
  fitPool(pool, previous.workers);
}

/** A limit a worker reads at its start changed: each is replaced by one started with it, which listens first. */
function renewWorkers(pool: PoolState): void {
  // Spares have the old settings: they go first, so that none takes a place; new ones start after.
  void pool.spares.stopAll();
  for (const worker of serving(pool)) recycle(pool, worker, 'new settings from SIGHUP');
  pool.spares.fit();
}

/** After a SIGHUP: the pool's bounds as read again; workers past --workers retired (idle ones first), a static pool filled. */
function fitPool(pool: PoolState, previousWorkers: number): void {
  const { dispatcher, workers, log } = pool;
  const current = pool.settings.current;
  dispatcher.bound = current.listenBacklog;
  dispatcher.spoolMax = current.spoolMaxSize;
  dispatcher.setConcurrency(current.workerConcurrency);
  pool.feed.publish();
  pool.processManagerSettings = describeProcessManager(current);
  pool.spares.fit();
  // Only a new count resizes: a worker being restarted after an exit is not yet counted as serving.
  if (current.workers === previousWorkers) return;
  const idleNow = new Set(idle(pool).map(({ worker }) => worker.worker));
  const { stop, start } = resize(pool.config.pm, current.workers, serving(pool), idleNow);
  for (const worker of stop) {
    log.info(`Stopping worker ${worker.process.pid} (--workers is now ${current.workers})`);
    workers.retire(worker);
  }
  if (start > 0) {
    log.info(`Starting ${start} more workers (--workers is now ${current.workers})`);
    workers.grow(start);
  }
}
