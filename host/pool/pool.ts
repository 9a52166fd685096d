// The host's primary process (php-fpm's master): owns the public socket, publishes its workers to the proxies
// on its machine (WORKERS_PATH), and dispatches each request that reaches it to the least busy worker
// (host/pool/dispatcher.ts); keeps its workers as --pm says (static: --workers; dynamic: idle
// ones between the spare bounds; ondemand: started by requests, stopped when idle), replaces a worker
// that dies, recycles one that asks (max requests, an overrun) by starting its replacement first,
// answers /status and /ping itself, and stops them all on SIGTERM.
// runPool builds the pool's state (poolState.ts) and wires each event to its step: a worker's start
// (workerStart.ts), what it says (workerMessages.ts), its retirement (workerRetire.ts), its exit (workerLeft.ts,
// quarantineNotices.ts), the maintenance (maintenance.ts), a reload (poolReload.ts), the server (poolServer.ts),
// /status (poolStatus.ts) and the stop (poolStop.ts). What it decides is pmPolicy.ts's (pure); a worker as it
// knows it is a poolWorker.ts record; the table the proxies follow is workersFeed.ts, the spares spares.ts.
import cluster from 'node:cluster';
import { join } from 'node:path';
import { describeProcessManager, describeSettings, logSettingsOf, sliceFor } from '../../common/config.ts';
import { siblingFile } from '../../common/entryFile.ts';
import { readyLine } from '../../common/ready.ts';
import type { Reloads } from '../../common/reload.ts';
import { poolPace } from '../../common/restartPace.ts';
import { notifyReady } from '../../common/serviceManager.ts';
import type { HostConfig } from '../../common/settings.ts';
import { onShutdownSignal } from '../../common/shutdown.ts';
import { Supervisor } from '../../common/supervisor.ts';
import { makeTempDir, removeStaleTempDirs } from '../../common/tempDirs.ts';
import { terminalWriter } from '../../common/terminal.ts';
import { answerMissingController } from '../controller/missingController.ts';
import type { HostLog } from '../wire/hostLog.ts';
import { countMissingAnswered, departedNone } from '../wire/stats.ts';
import { admissionOf } from './admission.ts';
import { Dispatcher } from './dispatcher.ts';
import { openHostLog, type PrimaryHostLog } from './hostLogFile.ts';
import { keepPool, onNoIdleWorker } from './maintenance.ts';
import { initialWorkers } from './pmPolicy.ts';
import { applyToWorkers, reloadSettings } from './poolReload.ts';
import { listen, poolServer } from './poolServer.ts';
import { servingRecords, type LiveSettings, type PoolState } from './poolState.ts';
import { PoolWorkers } from './poolWorker.ts';
import { HARD_STOP_MS, stopPool } from './poolStop.ts';
import { Quarantine } from './quarantine.ts';
import { relayLines } from './relayLines.ts';
import { Spares } from './spares.ts';
import { WorkersFeed } from './workersFeed.ts';
import { fateOf, workerExited, workerLeft } from './workerLeft.ts';
import { takeOutOfTable, whenIdle } from './workerRetire.ts';
import { forkWorker, launchWorker } from './workerStart.ts';

export async function runPool(config: HostConfig, reloads: Reloads<HostConfig>): Promise<void> {
  const log = openHostLog(config.logs, logSettingsOf(config), config.dev ? terminalWriter(join(config.www, 'controllers')) : undefined);
  // Workers send their lines here, so this process alone reopens host.log; its workers ignore SIGHUP.
  const settings: LiveSettings = { current: config };
  reloads((next, note, kept) => reloadSettings(settings, log, next, note, kept));
  const startedAt = new Date().toISOString();
  await removeLeftovers(log);
  const pool = createPool(config, settings, log, await makeTempDir('host'), startedAt);
  // Workers are forked with node:cluster for its IPC; each listens on its own socket (exclusive), so no
  // scheduling policy applies. fd WATCHDOG_LOG_FD is the pipe their watchdog thread writes to.
  cluster.setupPrimary({
    exec: siblingFile(import.meta.url, '../worker/workerMain'),
    args: [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc', 'pipe'],
  });
  const admission = admissionOf(config);
  const server = poolServer(pool, admission);
  const initial = initialWorkers(config.pm, config);
  settings.applyToWorkers = (previous) => applyToWorkers(pool, previous);
  try {
    await pool.workers.start(initial);
  } catch (err) {
    await pool.workers.stop('SIGTERM', config.shutdownTimeout * 1000 + HARD_STOP_MS);
    throw err;
  }
  const url = await listen(server, config, admission.tls !== undefined);
  pool.timers = keepPool(pool);
  log.notice(
    `Host pool ${process.pid} serving ${config.www}/controllers on ${url} with ${config.pm === 'static' ? `${config.workers} workers` : `pm ${config.pm}, up to ${config.workers} workers, ${initial} started`}`,
  );
  log.info(`Settings: ${describeSettings(sliceFor('host', config))}`);
  process.stdout.write(`${readyLine(url)}\n`);
  notifyReady((message) => log.error(message));
  onShutdownSignal((reason) => stopPool(reason, pool, server));
}

/** The pool's state, each event of its parts wired to the step that handles it. */
function createPool(config: HostConfig, settings: LiveSettings, log: PrimaryHostLog, socketDir: string, startedAt: string): PoolState {
  const pool: PoolState = {
    config,
    settings,
    log,
    socketDir,
    socketSerial: 0,
    startedAt,
    workers: new Supervisor({
      launch: () => launchWorker(pool),
      // A worker that served and died (a controller's process.exit, a crash) is replaced at once, as php-fpm does.
      pace: poolPace(config.workers, true),
      retire: (worker) => takeOutOfTable(pool, worker),
      events: {
        left: (worker, how, was) => workerLeft(pool, worker, how, was),
        exited: (worker, _how, delay) => workerExited(pool, worker, delay),
        restartFailed(err, delay) {
          pool.departed.restarts.exited += 1;
          log.error(`Could not start a worker: ${String(err)}; starting a new one${delay ? ` in ${delay} ms` : ''}`);
        },
        // The old worker keeps serving; it is recycled when a later replacement starts.
        replaceFailed: (worker, err, delay) =>
          log.error(`Could not start a replacement for worker ${worker.process.pid}: ${String(err)}; trying again in ${delay} ms`),
      },
    }),
    records: new PoolWorkers(),
    dispatcher: new Dispatcher(config.listenBacklog, config.workerConcurrency, socketDir, config.spoolMaxSize, {
      ...relayLines(log),
      // Counted in the pool's own totals, as the worker that answered it before counted it.
      answerWithoutWorker: answerMissingController(join(config.www, 'controllers'), log, () => countMissingAnswered(pool.departed)),
      noIdleWorker: () => onNoIdleWorker(pool),
      fateOf: (slot) => fateOf(pool, slot),
      whenIdle: (slot) => whenIdle(pool, slot),
    }),
    feed: new WorkersFeed(() => ({
      concurrency: settings.current.workerConcurrency,
      // A host on TCP may be on another machine than its proxies: its workers' unix sockets are not theirs to reach.
      workers: config.socket
        ? pool.dispatcher
            .serving()
            .map((slot) => ({ pid: slot.pid, socket: slot.socketPath, blocked: slot.blocked, running: slot.blockedRunning }))
        : [],
    })),
    spares: new Spares({
      fork: () => forkWorker(pool),
      stopped: () => pool.workers.stopped,
      wanted: () => settings.current.spareWorkers,
      serving: () => servingRecords(pool),
      log,
    }),
    quarantine: new Quarantine(),
    departed: departedNone(),
    figures: { maxChildrenReached: 0, maxActive: 0 },
    warnedMaxChildren: false,
    processManagerSettings: describeProcessManager(config),
    maintenance: { spawnRate: 1, running: false },
    timers: [],
  };
  return pool;
}

/** What a host or worker killed outright left (they name their directories for their pids): never served again. */
async function removeLeftovers(log: HostLog): Promise<void> {
  const stale = await removeStaleTempDirs().catch((err: Error) => {
    log.warn(`Could not look for temporary directories left by processes that are gone: ${err.message}`);
    return [];
  });
  if (stale.length > 0)
    log.notice(
      `Removed ${stale.length} temporary director${stale.length === 1 ? 'y' : 'ies'} left by processes that are gone: ${stale.join(', ')}`,
    );
}
