// One host worker: its own controller registry, watcher and fastify server, sharing the pool's
// listening socket through node:cluster.
import { join } from 'node:path';
import type { Config } from '../common/config.ts';
import { onShutdownSignal } from '../common/shutdown.ts';
import { createHostApp } from './app.ts';
import { ExecutionLimit } from './executionLimit.ts';
import { workerHostLog } from './hostLog.ts';
import type { ToPrimary, ToWorker } from './poolMessages.ts';
import { ControllerRegistry } from './registry.ts';
import type { PoolStatus } from './stats.ts';
import { WorkerStats } from './stats.ts';
import { watchControllers } from './watcher.ts';

const STATUS_TIMEOUT_MS = 2_000;

function send(message: ToPrimary): void {
  process.send?.(message);
}

export async function runWorker(config: Config): Promise<void> {
  // Listen to the pool at once: IPC messages to a process without a handler are dropped, and the pool
  // may ask for stats as soon as it sees this worker listen, a moment before the full handler is set.
  // (The pool stops workers with a signal and recycles only workers that are up, so no 'retire' comes
  // earlier.)
  const stats = new WorkerStats();
  let handle = (message: ToWorker): void => {
    if (message.type === 'stats?') send({ type: 'stats', id: message.id, snapshot: stats.snapshot() });
    // Sent once this worker listens, when `limit` below exists, maybe before the full handler is set.
    else if (message.type === 'log-format') limit?.setLogFormat(message.json);
  };
  process.on('message', (message: ToWorker) => handle(message));
  const log = workerHostLog();
  // SIGHUP is for the primary, which writes host.log; sent to the whole process group it must not end
  // a worker (its default action).
  process.on('SIGHUP', () => {});
  const controllersDir = join(config.www, 'controllers');

  let retireAsked = false;
  const askToRetire = (reason: string) => {
    if (retireAsked) return;
    retireAsked = true;
    send({ type: 'retire-me', reason });
  };

  const registry = new ControllerRegistry(controllersDir, {
    loaded: (c, reason) => {
      stats.loaded(c.name, c.version);
      log.info(`Loaded controller ${c.name} from ${c.file} (version ${c.version}, on ${reason})`);
    },
    removed: (name, file) => log.info(`Unloaded controller ${name}: ${file} was removed`),
    reloadFailed: (name, err) =>
      log.error(`Reload of controller ${name} failed, the previous version keeps serving: ${(err as Error).message ?? String(err)}`),
    disposeFailed: (name, err) => log.warn(`dispose() of controller ${name} threw: ${(err as Error).stack ?? String(err)}`),
  });
  const watcher = await watchControllers(registry, (err) => log.error(`Watcher error on ${controllersDir}: ${String(err)}`));

  const limit =
    config.maxExecutionTime > 0
      ? new ExecutionLimit(config.maxExecutionTime * 1000, { file: join(config.logs, 'host.log'), json: config.logFormat === 'json' }, {
          overrun(tracked) {
            log.error(
              `Maximum execution time of ${config.maxExecutionTime} seconds exceeded in controller ${tracked.name} (${tracked.file}) in ${tracked.what}: request dropped, worker ${process.pid} will be replaced`,
              tracked.requestId,
            );
            askToRetire('max_execution_time');
          },
          watchdogFailed: (err) => log.error(`The execution-time watchdog failed; synchronous overruns go unchecked: ${err.stack ?? err.message}`),
          tableFull: (slots) => log.warn(`More than ${slots} controller calls in flight in worker ${process.pid}: calls past that run without the execution limit`),
        })
      : undefined;

  const pendingStatus = new Map<number, (status: PoolStatus) => void>();
  let nextStatusId = 0;
  const poolStatus = (full: boolean) =>
    new Promise<PoolStatus>((resolve, reject) => {
      const id = nextStatusId++;
      const timer = setTimeout(() => {
        pendingStatus.delete(id);
        reject(new Error('the host pool did not answer the status request'));
      }, STATUS_TIMEOUT_MS);
      pendingStatus.set(id, (status) => {
        clearTimeout(timer);
        pendingStatus.delete(id);
        resolve(status);
      });
      send({ type: 'status?', id, full });
    });

  const app = createHostApp({
    registry,
    log,
    stats,
    limit,
    poolStatus,
    onRequestEnd: () => {
      if (config.maxRequests > 0 && stats.requests >= config.maxRequests) askToRetire(`max_requests ${config.maxRequests} reached`);
    },
  });

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
      send({ type: 'final-stats', snapshot: stats.snapshot() });
      await log.drain();
    })());

  // A recycled worker lets every controller run out its limit; a stop waits --shutdown-timeout.
  const recycleStopMs = (config.maxExecutionTime || 30) * 1000 + 15_000;
  onShutdownSignal(() => retire(config.shutdownTimeout * 1000));

  if (config.socket) await app.listen({ path: config.socket });
  else await app.listen({ host: config.hostListen, port: config.hostPort });
  log.info(`Worker ${process.pid} ready`);
  stats.starting = false;
  handle = (message) => {
    if (message.type === 'retire') retire(recycleStopMs).then(() => process.exit(0));
    else if (message.type === 'stats?') send({ type: 'stats', id: message.id, snapshot: stats.snapshot() });
    else if (message.type === 'status') pendingStatus.get(message.id)?.(message.status);
    else if (message.type === 'log-format') limit?.setLogFormat(message.json);
  };
}
