// One host worker: its own controller registry, watcher and fastify server, listening on a private
// socket that only the pool's dispatcher (host/pool/dispatcher.ts) connects to.
import { join } from 'node:path';
import type { IpcChannel } from '../../common/ipc.ts';
import type { HostConfig } from '../../common/settings.ts';
import { onShutdownSignal } from '../../common/shutdown.ts';
import { createHostApp } from './app.ts';
import { captureConsole } from './consoleCapture.ts';
import { containControllerFaults } from '../controller/controllerFaults.ts';
import { showErrorsToLocalClients } from '../controller/devErrorPage.ts';
import { ExecutionLimit } from './executionLimit.ts';
import { workerHostLog } from '../wire/hostLog.ts';
import { WATCHDOG_LOG_FD, type PoolSays, type QuarantineHold, type WorkerSays } from '../wire/poolMessages.ts';
import { QuarantineGate } from './quarantineGate.ts';
import { ControllerRegistry } from '../controller/registry.ts';
import { RunningCalls } from './runningCalls.ts';
import { slowlogMessage } from './slowlog.ts';
import { WorkerStats } from '../wire/stats.ts';
import { watchControllers } from './watcher.ts';
import { reportExitsDuringCalls } from './workerExit.ts';
import { reportSelfKills } from './selfKill.ts';

/** The kernel caps a listen queue at net.core.somaxconn (4096 on current Linux): asking more takes that. */
const WORKER_LISTEN_QUEUE = 65_535;

const STATUS_TIMEOUT_MS = 2_000;

export async function runWorker(
  config: HostConfig,
  socket: string,
  pool: IpcChannel<WorkerSays, PoolSays>,
  quarantined: readonly QuarantineHold[] = [],
): Promise<void> {
  const stats = new WorkerStats();
  const running = new RunningCalls();
  pool.answer('idle', () => running.whenNone().then(() => null));
  // The pool may ask for stats as soon as it sees this worker listen.
  pool.answer('stats', () => stats.snapshot());
  const log = workerHostLog(pool);
  const controllersDir = join(config.www, 'controllers');
  const consoleCapture = captureConsole(log, controllersDir);
  reportExitsDuringCalls(WATCHDOG_LOG_FD, (call, exit) =>
    log.info(
      `Controller ${call.controller} (${call.file}) ${exit.message} in ${call.what} after its handler returned: its answer ends where it is`,
      call.requestId,
    ),
  );
  reportSelfKills(WATCHDOG_LOG_FD, running);

  let retireAsked: { now: boolean } | undefined;
  /** `now`: this worker is unsafe to send more to (an uncaught exception), even if it asked before for a later reason. */
  const askToRetire = (reason: string, now = false) => {
    if (retireAsked && (retireAsked.now || !now)) return;
    retireAsked = { now };
    pool.notify('retire-me', { reason, now });
  };
  containControllerFaults({ log, stats, retire: (reason) => askToRetire(reason, true) });

  const registry = new ControllerRegistry(
    controllersDir,
    {
      // Every worker loads each version itself: the pid tells their lines apart.
      loaded: (c, reason) => {
        stats.loaded(c.name, c.version, reason);
        const helpers =
          c.dependencies.length > 0 ? ` with ${c.dependencies.length} local module${c.dependencies.length === 1 ? '' : 's'}` : '';
        log.info(`Loaded controller ${c.name} from ${c.file}${helpers} in worker ${process.pid} (version ${c.version}, on ${reason})`);
      },
      removed: (name, file) => log.info(`Unloaded controller ${name} in worker ${process.pid}: ${file} was removed`),
      reloadFailed: (name, err, serving) =>
        log.error(
          `Reload of controller ${name} failed in worker ${process.pid}, ${serving ? `version ${serving.version} keeps serving` : 'no version is serving it (requests get 500)'}: ${(err as Error).message ?? String(err)}`,
        ),
      disposeFailed: (name, err) => log.warn(`dispose() of controller ${name} threw: ${(err as Error).stack ?? String(err)}`),
    },
    config.followSymlinks,
  );
  // Controllers the pool holds because they keep killing workers (host/pool/quarantine.ts): held until their files change.
  const gate = new QuarantineGate(quarantined);
  pool.on('quarantine', (hold) => gate.hold(hold));
  pool.on('quarantine-lifted', ({ controller }) => gate.lift(controller));
  // A spare loads what the pool serves, so its first requests find them loaded; a failure is the registry's to log.
  pool.on('preload', ({ controllers }) => {
    limit?.warm();
    for (const name of controllers)
      void Promise.resolve()
        .then(() => registry.acquire(name))
        .then(
          (controller) => registry.release(controller),
          () => undefined,
        );
  });
  const watcher = await watchControllers(
    registry,
    (err) => log.error(`Watcher error on ${controllersDir}: ${String(err)}`),
    (name, file) => {
      for (const controller of gate.changed(name, file)) pool.notify('files-changed', { controller });
    },
  );

  // The slowlog's clock is the limit's: its watchdog thread writes both (executionLimit.ts).
  const limit =
    config.maxExecutionTime > 0 || config.slowlogTimeout > 0
      ? new ExecutionLimit(config.maxExecutionTime * 1000, config.slowlogTimeout * 1000, WATCHDOG_LOG_FD, {
          overrun(tracked) {
            log.error(
              `Maximum execution time of ${config.maxExecutionTime} seconds exceeded in controller ${tracked.name} (${tracked.file}) in ${tracked.what}: request dropped, worker ${process.pid} will be replaced`,
              tracked.requestId,
            );
            // The event loop was free to drop it: the call was awaiting, with no stack of its own.
            log.error(slowlogMessage(tracked, { dropped: Date.now() - tracked.startedAt }, process.pid, 'awaiting'), tracked.requestId);
            askToRetire('max_execution_time');
          },
          watchdogFailed: (err) =>
            log.error(`The execution-time watchdog failed; synchronous overruns go unchecked: ${err.stack ?? err.message}`),
          tableFull: (slots) =>
            log.warn(
              `More than ${slots} controller calls in flight in worker ${process.pid}: calls past that run without the execution limit`,
            ),
        })
      : undefined;

  const poolStatus = (full: boolean) => pool.request('status', { full }, STATUS_TIMEOUT_MS);

  const app = createHostApp({
    registry,
    log,
    stats,
    limit,
    inputLimits: { postMaxSize: config.postMaxSize, uploadMaxFilesize: config.uploadMaxFilesize, maxFileUploads: config.maxFileUploads },
    poolStatus,
    onRequestEnd: () => {
      if (config.maxRequests > 0 && stats.requests >= config.maxRequests) askToRetire(`max_requests ${config.maxRequests} reached`);
    },
    running,
    outputBuffering: config.outputBuffering,
    quarantined: (name) => gate.retryAfter(name, Date.now()),
    // Until the proxies and the primary read that it retires, what still reaches it goes elsewhere, unstarted.
    startsNothing: () => (retireAsked?.now ? 'its worker had an uncaught exception and retires' : undefined),
  });

  if (config.dev) showErrorsToLocalClients(app, controllersDir, config.typeErrors);

  let retiring: Promise<void> | undefined;
  /** Stops taking requests, finishes those in flight, cutting what is left after `hardStopMs`. */
  const retire = (hardStopMs: number) =>
    (retiring ??= (async () => {
      stats.retiring = true;
      log.info(`Worker ${process.pid} retiring after ${stats.requests} requests`);
      const server = app.server;
      // Answer anything still sent on an open connection with `Connection: close`, and leave idle
      // sockets for the proxy to close: closing one ourselves races with the proxy reusing it, and the
      // request it sends then would fail. The proxy's agent drops idle sockets within 10 s.
      server.maxRequestsPerSocket = 1;
      server.closeIdleConnections = () => {};
      const hardStop = setTimeout(() => server.closeAllConnections(), hardStopMs);
      await app.close();
      clearTimeout(hardStop);
      await limit?.close();
      await watcher.close();
      await registry.disposeAll();
      // The pool adds what this worker did to the totals of workers gone, so /status never goes backwards.
      pool.notify('final-stats', { snapshot: stats.snapshot() });
      consoleCapture.flush();
      await log.drain();
    })());

  // A recycled worker lets every controller run out its limit; a stop waits --shutdown-timeout.
  const recycleStopMs = (config.maxExecutionTime || 30) * 1000 + 15_000;
  onShutdownSignal(() => retire(config.shutdownTimeout * 1000));

  // Its own socket, not one shared through node:cluster: the dispatcher chooses which worker runs a request. A
  // unix socket refuses a connect past its listen queue (EAGAIN) instead of retrying as TCP does, and a proxy
  // opens a connection per request in flight: the queue is as long as the kernel allows (net.core.somaxconn).
  await app.listen({ path: socket, exclusive: true, backlog: WORKER_LISTEN_QUEUE });
  log.info(`Worker ${process.pid} ready`);
  pool.notify('listening', null);
  stats.starting = false;
  pool.on('retire', () => void retire(recycleStopMs).then(() => process.exit(0)));
}
