// The pool kept as --pm says (pmPolicy.ts decides): php-fpm's maintenance once a second, a worker started for a
// request that waits (ondemand), and the one warning that the pool is at --workers.
import { maintains, maintenance, onWaiting } from './pmPolicy.ts';
import { available, idle, serving, starting, type PoolState } from './poolState.ts';

/** php-fpm's maintenance period for dynamic and ondemand pools. */
const MAINTENANCE_MS = 1_000;

/** Once the pool listens: the maintenance (dynamic and ondemand pools) and the spares, kept once a second. */
export function keepPool(pool: PoolState): (NodeJS.Timeout | undefined)[] {
  const maintenanceTimer = maintains(pool.config.pm) ? setInterval(() => void maintain(pool), MAINTENANCE_MS) : undefined;
  pool.spares.fit();
  const sparesKept = setInterval(() => pool.spares.preload(), MAINTENANCE_MS);
  return [maintenanceTimer, sparesKept];
}

/** php-fpm's maintenance tick: one at a time, after the counters it needs are asked for. */
async function maintain(pool: PoolState): Promise<void> {
  const { workers, maintenance: state } = pool;
  if (workers.stopped || state.running) return;
  state.running = true;
  try {
    // Proxies send requests straight to the workers: only these know what they run.
    if (pool.settings.current.workerConcurrency === 0)
      await Promise.all(pool.dispatcher.serving().map((slot) => pool.records.ofSlot(slot)!.snapshot()));
    if (!workers.stopped) applyMaintenance(pool);
  } finally {
    state.running = false;
  }
}

function applyMaintenance(pool: PoolState): void {
  const { workers, log } = pool;
  const decision = maintenance({
    pm: pool.config.pm,
    settings: pool.settings.current,
    now: performance.now(),
    idle: idle(pool),
    available: available(pool),
    starting: starting(pool),
    serving: serving(pool).length,
    spawnRate: pool.maintenance.spawnRate,
  });
  pool.maintenance.spawnRate = decision.spawnRate;
  if (decision.stop) {
    const { worker, why } = decision.stop;
    // Stopped as idle: not counted as recycled.
    worker.reaped = true;
    log.info(`Stopping idle worker ${worker.pid} (${why})`);
    workers.retire(worker.worker);
  }
  if (decision.hasRoom) pool.warnedMaxChildren = false;
  if (decision.atMaxChildren) reachedMaxChildren(pool);
  if (decision.start > 0) workers.grow(decision.start);
}

/** A request waits with no worker idle: an ondemand pool starts one, unless it is at --workers. */
export function onNoIdleWorker(pool: PoolState): void {
  const { workers, dispatcher } = pool;
  if (workers.stopped) return;
  const decision = onWaiting(pool.config.pm, {
    starting: starting(pool),
    queued: dispatcher.queued,
    serving: serving(pool).length,
    workers: pool.settings.current.workers,
  });
  if (decision === 'at max children') reachedMaxChildren(pool);
  else if (decision === 'start') workers.grow(1);
}

function reachedMaxChildren(pool: PoolState): void {
  if (pool.warnedMaxChildren) return;
  pool.warnedMaxChildren = true;
  pool.figures.maxChildrenReached += 1;
  pool.log.warn(`[pool extqs-host] server reached max_children setting (${pool.settings.current.workers}), consider raising it`);
}
