// The host's primary process (php-fpm's master): owns the public socket, publishes its workers to the proxies
// on its machine (WORKERS_PATH), and dispatches each request that reaches it to the least busy worker
// (host/pool/dispatcher.ts); keeps its workers as --pm says (static: --workers; dynamic: idle
// ones between the spare bounds; ondemand: started by requests, stopped when idle), replaces a worker
// that dies, recycles one that asks (max requests, an overrun) by starting its replacement first,
// answers /status and /ping itself, and stops them all on SIGTERM.
// What it decides is pmPolicy.ts's (pure); a worker as it knows it is a poolWorker.ts record; the table the
// proxies follow is workersFeed.ts, the spares spares.ts, a death's line deathLine.ts.
import cluster, { type Worker } from 'node:cluster';
import { chmod, rm } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describeProcessManager, describeSettings, logSettingsOf, sliceFor } from '../../common/config.ts';
import { siblingFile } from '../../common/entryFile.ts';
import { deliver } from '../../common/logRelay.ts';
import { readyLine } from '../../common/ready.ts';
import { notifyReady } from '../../common/serviceManager.ts';
import { terminalWriter } from '../../common/terminal.ts';
import { poolPace } from '../../common/restartPace.ts';
import type { Reloads } from '../../common/reload.ts';
import { sighupLine, workersReplacedFor } from '../../common/reloadResolver.ts';
import { formatUpstream } from '../../common/settingParsers.ts';
import type { HostConfig } from '../../common/settings.ts';
import { onShutdownSignal } from '../../common/shutdown.ts';
import { Supervisor, type Launched } from '../../common/supervisor.ts';
import { HOST_MAX_HEADER_SIZE, WORKERS_PATH } from '../../common/protocol.ts';
import { makeTempDir, removeStaleTempDirs, removeTempDirsOf } from '../../common/tempDirs.ts';
import { requestIdOf } from '../../common/requestId.ts';
import type { HostLog } from '../wire/hostLog.ts';
import { BLOCKED_AFTER_MS, type WireHostEntry } from '../wire/poolMessages.ts';
import {
  addDeparted,
  countMissingAnswered,
  departedNone,
  summarize,
  type PoolFields,
  type PoolStatus,
  type WorkerSnapshot,
} from '../wire/stats.ts';
import { answerMissingController } from '../controller/missingController.ts';
import { refuseUnreadable } from '../controller/unreadableRequest.ts';
import { openHostLog } from './hostLogFile.ts';
import { admissionOf, admittingServer } from './admission.ts';
import { controllersRelayed, deathLine, type Death } from './deathLine.ts';
import { Dispatcher, SPOOL_RETRY_AFTER_S, WorkerSlot, type DispatcherEvents } from './dispatcher.ts';
import {
  belowConcurrency,
  canTakeRequest,
  idleLongestFirst,
  initialWorkers,
  maintains,
  maintenance,
  onWaiting,
  resize,
} from './pmPolicy.ts';
import { PoolWorker, PoolWorkers, readWatchdogPipe } from './poolWorker.ts';
import { Quarantine, QUARANTINE_DEATHS, QUARANTINE_WITHIN_MS } from './quarantine.ts';
import { Spares } from './spares.ts';
import { WorkersFeed } from './workersFeed.ts';

/** php-fpm's maintenance period for dynamic and ondemand pools. */
const MAINTENANCE_MS = 1_000;
/** Longer than the proxy keeps an idle socket (proxy/forward/forwarding.ts), as the workers' own servers did. */
const KEEP_ALIVE_MS = 75_000;
/** Workers cut their connections at --shutdown-timeout (worker.ts); one that hangs past it by this much is killed. */
const HARD_STOP_MS = 5_000;
/**
 * The most a worker's exit waits for the end of its watchdog pipe, whose last line may say why it died: the pipe
 * ends with the process, unless a child it spawned holds it open.
 */
const DRAIN_MS = 200;
/** How long the primary's relay waits for a worker whose connection failed to be seen exiting (proxy: WORKER_EXIT_WAIT_MS). */
const FATE_WAIT_MS = 1_000;

export async function runPool(config: HostConfig, reloads: Reloads<HostConfig>): Promise<void> {
  const log = openHostLog(config.logs, logSettingsOf(config), config.dev ? terminalWriter(join(config.www, 'controllers')) : undefined);
  // Workers send their lines here, so this process alone reopens host.log; its workers ignore SIGHUP.
  // What a worker started from now on is given: the live settings change with a reload.
  let current = config;
  // Until the workers are there a reload changes `current` alone: a worker started later asks for it.
  const reloaded: { applyToWorkers?: (previous: HostConfig) => void } = {};
  reloads((settings, note, kept) => {
    const previous = current;
    current = settings;
    const reopened = log.reopen(settings);
    log[kept ? 'error' : 'notice'](sighupLine([reopened && 'host.log'], note));
    log.info(`Settings: ${describeSettings(sliceFor('host', settings))}`);
    reloaded.applyToWorkers?.(previous);
  });
  const startedAt = new Date().toISOString();
  const records = new PoolWorkers();
  // Counters of workers gone: a retiring worker's final stats, or what a crashed one last reported, so
  // no total ever falls below what /status (and so Prometheus) has been shown.
  const departed = departedNone();
  const quarantine = new Quarantine();
  await removeLeftovers(log);
  // Each worker's private socket, in a directory only this user can enter.
  const socketDir = await makeTempDir('host');
  let socketSerial = 0;
  const figures = { maxChildrenReached: 0, maxActive: 0 };
  /** php-fpm warns once until the pool has room again. */
  let warnedMaxChildren = false;
  // A request whose controller outlives its answer keeps its worker busy at most this long.
  const idleWaitMs = () => (current.maxExecutionTime || 30) * 1000 + 15_000;

  // The handles are cluster workers; the events are host.log's lines and /status's counters.
  const workers: Supervisor<Worker, void> = new Supervisor({
    launch: fork,
    // A worker that served and died (a controller's process.exit, a crash) is replaced at once, as php-fpm does.
    pace: poolPace(config.workers, true),
    // Sent nothing more, then told to leave once its request (if any) ends; its successor, if any, listens.
    retire: (worker) => {
      const record = records.of(worker);
      if (record) dispatcher.remove(record.slot);
      // The proxies first: they stop sending it requests and close their connections to it as they end.
      feed.publish();
      record?.channel.notify('retire', null);
    },
    events: {
      left: (worker, how, was) => left(records.of(worker), worker, how, was),
      // Its line waits for its watchdog pipe's last lines (left()).
      exited(worker, _how, delay) {
        departed.restarts.exited += 1;
        const record = records.of(worker);
        if (record) record.exitDelay = delay;
      },
      restartFailed(err, delay) {
        departed.restarts.exited += 1;
        log.error(`Could not start a worker: ${String(err)}; starting a new one${delay ? ` in ${delay} ms` : ''}`);
      },
      // The old worker keeps serving; it is recycled when a later replacement starts.
      replaceFailed: (worker, err, delay) =>
        log.error(`Could not start a replacement for worker ${worker.process.pid}: ${String(err)}; trying again in ${delay} ms`),
    },
  });

  /** Workers that take or will take requests: neither retiring nor stopped. */
  const serving = () => workers.handles.filter((w) => !workers.isRetiring(w));
  const servingRecords = () => serving().flatMap((w) => records.of(w) ?? []);
  const starting = () => servingRecords().filter((w) => !w.up).length;
  /** Workers below --worker-concurrency (all of them when it is 0): Passenger starts another only when none is. */
  const available = () => dispatcher.serving().filter((slot) => belowConcurrency(slot, current.workerConcurrency)).length;
  /** Workers running nothing, the one idle longest first (ondemand and dynamic stop those first). */
  const idle = () =>
    idleLongestFirst(
      dispatcher.serving().map((slot) => {
        const record = records.ofSlot(slot)!;
        return { worker: record, inFlight: slot.inFlight, blocked: slot.blocked, idleSince: slot.idleSince, quiet: record.quiet?.since };
      }),
    );

  function reachedMaxChildren(): void {
    if (warnedMaxChildren) return;
    warnedMaxChildren = true;
    figures.maxChildrenReached += 1;
    log.warn(`[pool extqs-host] server reached max_children setting (${current.workers}), consider raising it`);
  }

  const dispatcher = new Dispatcher(config.listenBacklog, config.workerConcurrency, socketDir, config.spoolMaxSize, {
    ...relayLines(log),
    // Counted in the pool's own totals, as the worker that answered it before counted it.
    answerWithoutWorker: answerMissingController(join(config.www, 'controllers'), log, () => countMissingAnswered(departed)),
    noIdleWorker() {
      if (workers.stopped) return;
      const counts = { starting: starting(), queued: dispatcher.queued, serving: serving().length, workers: current.workers };
      const decision = onWaiting(config.pm, counts);
      if (decision === 'at max children') reachedMaxChildren();
      else if (decision === 'start') workers.grow(1);
    },
    fateOf(slot) {
      const wait = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), FATE_WAIT_MS).unref());
      return Promise.race([records.ofSlot(slot)!.end().promise, wait]);
    },
    whenIdle(slot) {
      const record = records.ofSlot(slot);
      if (!record) return Promise.reject(new Error('gone'));
      return record.channel.request('idle', null, idleWaitMs()).then(
        () => undefined,
        (err: NodeJS.ErrnoException) => {
          // Only one that did not answer in time is recycled. A send that failed (EPIPE: killed by its watchdog,
          // not yet reaped) or a closed channel means it is dying; its exit is handled where it exits.
          if (err.code === undefined && workers.handles.includes(record.worker) && record.worker.isConnected())
            retire(record.worker, `still busy ${idleWaitMs()} ms after its request ended: ${err.message}`);
          throw err;
        },
      );
    },
  });

  const feed = new WorkersFeed(() => ({
    concurrency: current.workerConcurrency,
    // A host on TCP may be on another machine than its proxies: its workers' unix sockets are not theirs to reach.
    workers: config.socket
      ? dispatcher
          .serving()
          .map((slot) => ({ pid: slot.pid, socket: slot.socketPath, blocked: slot.blocked, running: slot.blockedRunning }))
      : [],
  }));

  const spares = new Spares({
    fork: forkWorker,
    stopped: () => workers.stopped,
    wanted: () => current.spareWorkers,
    serving: servingRecords,
    log,
  });

  let processManagerSettings = describeProcessManager(config);

  async function poolStatus(full: boolean) {
    const live = workers.handles.flatMap((w) => records.of(w) ?? []).filter((r) => !r.handedOver);
    const snapshots = await Promise.all(live.map((r) => r.snapshot()));
    const fields = poolFields(
      snapshots,
      dispatcher,
      { pm: config.pm, processManagerSettings, current, totalProcesses: workers.handles.length },
      figures,
    );
    return summarize(process.pid, startedAt, snapshots, departed, fields, full);
  }

  /** A worker left the pool (exited, or stopped): what it ran, its counters, its death line once its pipe is read. */
  function left(record: PoolWorker | undefined, worker: Worker, how: string, was: string): void {
    const slot = record?.slot;
    // What it ran failed with its connection; what waits in the queue does not. What it was relaying is read
    // before it is forgotten: the death line says what became of each.
    const relayed = slot ? [...slot.running] : [];
    if (slot) dispatcher.gone(slot);
    const unasked = was === 'ready' && !workers.stopped;
    feed.draining += 1;
    const late = new Promise<void>((resolve) => setTimeout(resolve, DRAIN_MS).unref());
    void Promise.race([record?.pipeEnded, late]).then(() => {
      feed.draining -= 1;
      const cause = record?.deathCause;
      if (record && slot) {
        if (unasked) feed.exited(slot.pid, cause?.requestId);
        record.end().settle(unasked ? { died: true, culprit: cause?.requestId } : undefined);
        feed.publish();
        rm(slot.socketPath, { force: true }).catch(() => undefined);
      }
      const delay = record?.exitDelay;
      if (delay !== undefined) died({ pid: worker.process.pid, how, delay, cause, relayed, blocked: slot?.blockedRunning ?? [] });
    });
    const last = record?.lastReported;
    if (last) addDeparted(departed, last);
    // A worker killed mid-request could not delete that request's uploads.
    const pid = worker.process.pid;
    if (pid !== undefined)
      removeTempDirsOf('upload', pid).catch((err: Error) => log.error(`Could not delete the uploads of worker ${pid}: ${err.message}`));
    if (was === 'retiring' && !workers.stopped && !record?.reaped) departed.restarts.recycled += 1;
  }

  const writeWireEntry = (entry: WireHostEntry) => log.write({ ...entry, time: new Date(entry.time) });

  function listenTo(record: PoolWorker): void {
    const { worker, channel } = record;
    channel.answer('config', () => ({
      config: current,
      socket: record.slot.socketPath,
      quarantined: quarantine.active(Date.now()),
    }));
    channel.on('files-changed', ({ controller }) => lifted(controller));
    channel.on('log', (batch) => deliver(batch, { 'host.log': writeWireEntry }));
    channel.answer('flush', (batch) => {
      deliver(batch, { 'host.log': writeWireEntry });
      return null;
    });
    // It comes before the worker's last log flush is answered, so before its exit.
    channel.on('final-stats', ({ snapshot }) => {
      record.lastReported = undefined;
      record.handedOver = true;
      addDeparted(departed, snapshot);
    });
    channel.answer('status', ({ full }) => poolStatus(full));
    channel.on('listening', () => {
      record.up = true;
      if (spares.has(record)) return void spares.listens(record);
      // One retired while it started (the pool was made smaller) takes no request.
      if (!workers.isRetiring(worker)) {
        dispatcher.add(record.slot);
        feed.publish();
      }
      record.listened?.();
    });
    channel.on('retire-me', ({ reason, now }) => {
      if (now && !workers.stopped) {
        dispatcher.remove(record.slot);
        feed.publish();
      }
      retire(worker, reason);
    });
    readWatchdogPipe(record, {
      blockedChanged: (blocked, running) => blockedChanged(record, blocked, running),
      entry: writeWireEntry,
      unreadable: (line) => log.error(`Unreadable line from the watchdog of worker ${worker.process.pid}: ${line}`),
    });
  }

  /** Every worker, spares too: one takes a place with what every worker knows. */
  const everyWorker = () => [...workers.handles.flatMap((w) => records.of(w) ?? []), ...spares.workers];

  /** A worker died unasked: its line, then its quarantine. */
  function died(death: Death): void {
    log.error(deathLine(death), death.cause?.requestId);
    const held = quarantine.death(Date.now(), {
      controller: death.cause?.controller,
      inFlight: controllersRelayed(death.relayed),
      files: death.cause?.files,
    });
    if (!held) return;
    log.error(
      `Controller ${held.controller} is quarantined: ${QUARANTINE_DEATHS} worker deaths within ${QUARANTINE_WITHIN_MS / 1000} s ${held.reason === 'attributed' ? 'caused by its calls' : 'with it alone in flight'}; ` +
        `its requests are answered 503 without running until its file or one of its imports changes, or for ${Math.round((held.until - Date.now()) / 1000)} s`,
    );
    const hold = { controller: held.controller, until: held.until, ...(held.files && { files: held.files }) };
    for (const live of everyWorker()) live.channel.notify('quarantine', hold);
  }

  /** A worker saw a quarantined controller's files change: every worker runs it again. */
  function lifted(controller: string): void {
    if (!quarantine.lift(controller)) return;
    log.notice(`Controller ${controller} is out of quarantine: its files changed`);
    for (const live of everyWorker()) live.channel.notify('quarantine-lifted', { controller });
  }

  /** A worker's event loop stopped turning while it ran calls, or turns again: it is routed around meanwhile. */
  function blockedChanged(record: PoolWorker, blocked: boolean, running: string[]): void {
    const { slot } = record;
    if (!slot.accepting) return;
    slot.blockedRunning = running;
    if (blocked)
      log.warn(
        `Worker ${record.pid} is blocked (its event loop has not turned for ${BLOCKED_AFTER_MS} ms): it is sent no new request until it turns again`,
      );
    else log.info(`Worker ${record.pid} turns again: it takes requests`);
    dispatcher.setBlocked(slot, blocked);
    feed.publish();
  }

  /** Replaces a worker that asked to: the old one keeps serving until the new one listens, so no request finds nobody. */
  function retire(worker: Worker, reason: string): void {
    if (workers.stopped || workers.isRetiring(worker)) return;
    log.info(`Recycling worker ${worker.process.pid} (${reason}): starting its replacement first`);
    workers.recycle(worker);
  }

  /** A limit a worker reads at its start changed: each is replaced by one started with it, which listens first. */
  function renewWorkers(): void {
    // Spares have the old settings: they go first, so that none takes a place; new ones start after.
    void spares.stopAll();
    for (const worker of serving()) retire(worker, 'new settings from SIGHUP');
    spares.fit();
  }

  /** After a SIGHUP: the pool's bounds as read again; workers past --workers retired (idle ones first), a static pool filled. */
  function fitPool(previousWorkers: number): void {
    dispatcher.bound = current.listenBacklog;
    dispatcher.spoolMax = current.spoolMaxSize;
    dispatcher.setConcurrency(current.workerConcurrency);
    feed.publish();
    processManagerSettings = describeProcessManager(current);
    spares.fit();
    // Only a new count resizes: a worker being restarted after an exit is not yet counted as serving.
    if (current.workers === previousWorkers) return;
    const idleNow = new Set(idle().map(({ worker }) => worker.worker));
    const { stop, start } = resize(config.pm, current.workers, serving(), idleNow);
    for (const worker of stop) {
      log.info(`Stopping worker ${worker.process.pid} (--workers is now ${current.workers})`);
      workers.retire(worker);
    }
    if (start > 0) {
      log.info(`Starting ${start} more workers (--workers is now ${current.workers})`);
      workers.grow(start);
    }
  }

  /** Forks a worker on a private socket of its own, and listens to what it says. */
  function forkWorker(): PoolWorker {
    const worker = cluster.fork();
    const record = records.add(new PoolWorker(worker, new WorkerSlot(worker.process.pid ?? 0, join(socketDir, `w${++socketSerial}.sock`))));
    listenTo(record);
    return record;
  }

  /** Starts a worker; it is ready once it says it listens on its socket. A spare takes the place at once. */
  function fork(): Launched<Worker, void> {
    const spare = spares.take();
    if (spare) {
      dispatcher.add(spare.slot);
      feed.publish();
      spares.startBehind();
      return { handle: spare.worker, process: spare.worker.process, ready: Promise.resolve() };
    }
    const record = forkWorker();
    const { worker } = record;
    const ready = new Promise<void>((resolve, reject) => {
      record.listened = resolve;
      worker.once('exit', () => reject(new Error(`worker ${worker.process.pid} exited before listening`)));
    });
    return { handle: worker, process: worker.process, ready };
  }

  // php-fpm's maintenance, once a second (pmPolicy.ts decides).
  let spawnRate = 1;
  let maintaining = false;
  async function maintain(): Promise<void> {
    if (workers.stopped || maintaining) return;
    maintaining = true;
    try {
      // Proxies send requests straight to the workers: only these know what they run.
      if (current.workerConcurrency === 0) await Promise.all(dispatcher.serving().map((slot) => records.ofSlot(slot)!.snapshot()));
      if (!workers.stopped) applyMaintenance();
    } finally {
      maintaining = false;
    }
  }

  function applyMaintenance(): void {
    const decision = maintenance({
      pm: config.pm,
      settings: current,
      now: performance.now(),
      idle: idle(),
      available: available(),
      starting: starting(),
      serving: serving().length,
      spawnRate,
    });
    spawnRate = decision.spawnRate;
    if (decision.stop) {
      const { worker, why } = decision.stop;
      // Stopped as idle: not counted as recycled.
      worker.reaped = true;
      log.info(`Stopping idle worker ${worker.pid} (${why})`);
      workers.retire(worker.worker);
    }
    if (decision.hasRoom) warnedMaxChildren = false;
    if (decision.atMaxChildren) reachedMaxChildren();
    if (decision.start > 0) workers.grow(decision.start);
  }

  // Workers are forked with node:cluster for its IPC; each listens on its own socket (exclusive), so no
  // scheduling policy applies. fd WATCHDOG_LOG_FD is the pipe their watchdog thread writes to.
  cluster.setupPrimary({
    exec: siblingFile(import.meta.url, '../worker/workerMain'),
    args: [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc', 'pipe'],
  });
  // Node's defaults otherwise, as fastify's server had them, but no 400 for a request without Host (HTTP/1.0).
  const admission = admissionOf(config);
  const server = admittingServer(
    admission,
    { maxHeaderSize: HOST_MAX_HEADER_SIZE, requestTimeout: 0, keepAliveTimeout: KEEP_ALIVE_MS, requireHostHeader: false },
    poolRequests({ feed, dispatcher, log, poolStatus, ready: () => canTakeRequest(current.pm, available()) }),
    (message) => log.error(message),
  );
  // Node keeps the first 2,000 fields and drops the rest without a word; the proxy bounds them
  // (--max-header-fields, up to 10,000), so every field it forwards reaches the controller.
  server.maxHeadersCount = 0;
  server.on('clientError', refuseUnreadable(log));
  const initial = initialWorkers(config.pm, config);
  const hardStopMs = config.shutdownTimeout * 1000 + HARD_STOP_MS;
  reloaded.applyToWorkers = (previous) => {
    // A limit a worker reads at its start: each is replaced by one started with it, which listens first.
    if (workersReplacedFor('host-pool', previous, current)) renewWorkers();
    // The pool's bounds (--workers, the spare bounds, the idle timeout, --listen-backlog) are read live.
    fitPool(previous.workers);
  };
  try {
    await workers.start(initial);
  } catch (err) {
    await workers.stop('SIGTERM', hardStopMs);
    throw err;
  }
  const url = await listen(server, config, admission.tls !== undefined);
  const maintenanceTimer = maintains(config.pm) ? setInterval(() => void maintain(), MAINTENANCE_MS) : undefined;
  spares.fit();
  const sparesKept = setInterval(() => spares.preload(), MAINTENANCE_MS);
  log.notice(
    `Host pool ${process.pid} serving ${config.www}/controllers on ${url} with ${config.pm === 'static' ? `${config.workers} workers` : `pm ${config.pm}, up to ${config.workers} workers, ${initial} started`}`,
  );
  log.info(`Settings: ${describeSettings(sliceFor('host', config))}`);
  process.stdout.write(`${readyLine(url)}\n`);
  notifyReady((message) => log.error(message));

  onShutdownSignal((reason) =>
    stopPool(reason, {
      config,
      log,
      server,
      feed,
      dispatcher,
      records,
      workers,
      spares,
      socketDir,
      timers: [maintenanceTimer, sparesKept],
    }),
  );
}

/** /status, /ping and /ready are the pool's own (php-fpm's master answers the first two), and /workers; the rest goes to a worker. */
function poolRequests(pool: {
  feed: WorkersFeed;
  dispatcher: Dispatcher;
  log: HostLog;
  poolStatus: (full: boolean) => Promise<PoolStatus>;
  /** The proxy's readiness probe asks this narrow question: a worker listens that can take a request now. */
  ready: () => boolean;
}): (req: IncomingMessage, res: ServerResponse) => void {
  const { feed, dispatcher, log, poolStatus, ready } = pool;
  return (req, res) => {
    const url = req.url ?? '';
    const path = url.split('?', 1)[0];
    if (req.method === 'GET' && path === WORKERS_PATH) return feed.follow(res);
    if ((req.method === 'GET' || req.method === 'HEAD') && (path === '/status' || path === '/ping' || path === '/ready')) {
      if (path === '/ping') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('pong');
      if (path === '/ready') return void (ready() ? res.writeHead(200).end('ready') : res.writeHead(503).end('no worker listens'));
      const full = new URLSearchParams(url.slice(path.length + 1)).has('full');
      poolStatus(full).then(
        (status) => res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(status)),
        (err: Error) => {
          log.error(`Could not gather /status: ${err.message}`);
          res.writeHead(500).end();
        },
      );
      return;
    }
    dispatcher.handle(req, res);
  };
}

/** SIGTERM: no new connection, what was accepted finished (up to --shutdown-timeout), then the workers and spares stopped. */
async function stopPool(
  reason: string,
  pool: {
    config: HostConfig;
    log: ReturnType<typeof openHostLog>;
    server: Server;
    feed: WorkersFeed;
    dispatcher: Dispatcher;
    records: PoolWorkers;
    workers: Supervisor<Worker, void>;
    spares: Spares;
    socketDir: string;
    timers: (NodeJS.Timeout | undefined)[];
  },
): Promise<void> {
  const { config, log, server, feed, dispatcher, records, workers, spares, socketDir } = pool;
  for (const timer of pool.timers) clearInterval(timer);
  log.notice(`Host pool ${process.pid} shutting down (${reason})`);
  // No new connections from now on: a proxy that connects finds no socket (a connect failure, which
  // it retries on another host) instead of a backlog that nobody accepts and that is reset when this
  // process exits (a reset before headers, which the proxy must answer 500).
  if (config.socket) await rm(config.socket, { force: true });
  // The proxies stop sending requests straight to the workers: what they send next finds no socket too.
  feed.end();
  // Answer what still arrives with `Connection: close`, and leave idle connections for the proxy to close:
  // closing one ourselves races with the proxy reusing it, and the request it sends then would fail. The
  // proxy drops idle sockets within 10 s.
  server.maxRequestsPerSocket = 1;
  server.closeIdleConnections = () => {};
  const closed = new Promise((resolve) => server.close(resolve));
  // What was accepted is finished, queued requests included, while the workers serve on (and are replaced
  // if one dies); what still runs at --shutdown-timeout is cut, as each worker cut it before.
  await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, config.shutdownTimeout * 1000).unref())]);
  server.closeAllConnections();
  for (const worker of workers.handles) {
    const record = records.of(worker);
    if (record) dispatcher.gone(record.slot);
  }
  // A signal, not a message: a worker still starting has no message handler yet, and would miss a
  // 'retire' (a stop during a recycle then waited for the hard stop). SIGTERM retires it the same way.
  const sparesGone = spares.stopAll();
  await workers.stop('SIGTERM', config.shutdownTimeout * 1000 + HARD_STOP_MS);
  await sparesGone;
  await closed;
  if (config.socket) await rm(config.socket, { force: true });
  await rm(socketDir, { recursive: true, force: true });
  await log.drain();
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

/** The relay's refusals and waits, each a host.log line naming the request. */
function relayLines(log: HostLog): Pick<DispatcherEvents, 'spoolFailed' | 'spoolTooLarge' | 'spoolFull' | 'queueFull' | 'leftQueue'> {
  return {
    spoolFailed(req, err) {
      log.error(`Could not keep the body of ${req.method} ${req.url} until a worker takes it: ${err.message}`, requestIdOf(req.headers));
    },
    spoolTooLarge(req, length, bound) {
      log.warn(
        `Refused ${req.method} ${req.url}: its Content-Length of ${length} bytes is larger than --spool-max-size (${bound}); answered 413`,
        requestIdOf(req.headers),
      );
    },
    spoolFull(req, bound) {
      log.error(
        `Refused ${req.method} ${req.url}: the bodies waiting for a worker reached --spool-max-size (${bound}) while it arrived; its file deleted, answered 503 (Retry-After ${SPOOL_RETRY_AFTER_S}), its connection closed`,
        requestIdOf(req.headers),
      );
    },
    queueFull(req, bound) {
      log.error(
        `Refused ${req.method} ${req.url}: every worker is busy and ${bound} requests wait already (--listen-backlog); answered 503`,
        requestIdOf(req.headers),
      );
    },
    leftQueue(req, waitedMs, running) {
      log.warn(
        `${req.method} ${req.url} left the listen queue after ${Math.round(waitedMs)} ms without a worker: every worker was busy running ${running.join(', ') || 'nothing'}`,
        requestIdOf(req.headers),
      );
    },
  };
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

/** Listens on the host's socket or port; the address the ready line and host.log give. */
async function listen(server: Server, config: HostConfig, tls: boolean): Promise<string> {
  // A socket file left by a host that was killed would make listen() fail with EADDRINUSE.
  if (config.socket) await rm(config.socket, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const backlog = Math.max(config.listenBacklog, 511);
    if (config.socket) server.listen({ path: config.socket, backlog }, resolve);
    else server.listen({ host: config.hostListen, port: config.hostPort, backlog }, resolve);
  });
  if (config.socket) await chmod(config.socket, 0o600);
  const port = (server.address() as AddressInfo).port;
  return config.socket
    ? `unix:${config.socket}`
    : formatUpstream({ kind: 'tcp', host: config.hostListen, port, ...(tls && { tls: true }) });
}
