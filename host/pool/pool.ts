// The host's primary process (php-fpm's master): owns the public socket, publishes its workers to the proxies
// on its machine (WORKERS_PATH), and dispatches each request that reaches it to the least busy worker
// (host/pool/dispatcher.ts); keeps its workers as --pm says (static: --workers; dynamic: idle
// ones between the spare bounds; ondemand: started by requests, stopped when idle), replaces a worker
// that dies, recycles one that asks (max requests, an overrun) by starting its replacement first,
// answers /status and /ping itself, and stops them all on SIGTERM.
import cluster, { type Worker } from 'node:cluster';
import { chmod, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describeProcessManager, describeSettings, logSettingsOf, sliceFor } from '../../common/config.ts';
import { siblingFile } from '../../common/entryFile.ts';
import { childEndpoint, IpcChannel } from '../../common/ipc.ts';
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
import { openHostLog } from './hostLogFile.ts';
import { admissionOf, admittingServer } from './admission.ts';
import { HOST_MAX_HEADER_SIZE, WORKERS_PATH, type WorkerTable } from '../../common/protocol.ts';
import { Dispatcher, SPOOL_RETRY_AFTER_S, WorkerSlot, type Relayed } from './dispatcher.ts';
import {
  BLOCKED_AFTER_MS,
  WATCHDOG_LOG_FD,
  type DeathCause,
  type PoolSays,
  type WatchdogLine,
  type WireHostEntry,
  type WorkerSays,
} from '../wire/poolMessages.ts';
import { makeTempDir, removeStaleTempDirs, removeTempDirsOf } from '../../common/tempDirs.ts';
import { answerMissingController } from '../controller/missingController.ts';
import { requestIdOf } from '../../common/requestId.ts';
import { addDeparted, countMissingAnswered, departedNone, summarize, type PoolFields, type WorkerSnapshot } from '../wire/stats.ts';
import { refuseUnreadable } from '../controller/unreadableRequest.ts';
import { Quarantine, QUARANTINE_DEATHS, QUARANTINE_WITHIN_MS } from './quarantine.ts';
import { routeController } from '../controller/controllerRoute.ts';
import { sendAgainAfterLoss, type WorkerEnd } from '../../common/workerLoss.ts';

/** Half the proxy's wait for /status (proxy/serverStatus.ts): a worker stuck in a loop shows as unresponsive. */
const SNAPSHOT_TIMEOUT_MS = 500;
/** php-fpm's maintenance period for dynamic and ondemand pools. */
const MAINTENANCE_MS = 1_000;
/** php-fpm spawns at most this many workers a second in dynamic mode, doubling up to it. */
const MAX_SPAWN_RATE = 32;
/** Longer than the proxy keeps an idle socket (proxy/forwarding.ts), as the workers' own servers did. */
const KEEP_ALIVE_MS = 75_000;
/** Unasked exits the table of workers names, the last ones. */
const EXITS_PUBLISHED = 16;
/** Workers cut their connections at --shutdown-timeout (worker.ts); one that hangs past it by this much is killed. */
const HARD_STOP_MS = 5_000;
/**
 * The most a worker's exit waits for the end of its watchdog pipe, whose last line may say why it died: the pipe
 * ends with the process, unless a child it spawned holds it open.
 */
const DRAIN_MS = 200;
/** How long the primary's relay waits for a worker whose connection failed to be seen exiting (proxy: WORKER_EXIT_WAIT_MS). */
const FATE_WAIT_MS = 1_000;

/** What an exit with no known cause most likely was, for the death line. */
function unknownCause(how: string): string {
  if (how === 'signal SIGKILL') return 'no known cause: a kill from outside, or the kernel out of memory';
  if (how === 'signal SIGABRT' || how === 'code 134') return 'no known cause: an abort, such as V8 out of heap memory';
  if (how.startsWith('signal ')) return 'no known cause: a native crash, or a signal from outside';
  return 'no known cause';
}

export async function runPool(config: HostConfig, reloads: Reloads<HostConfig>): Promise<void> {
  const log = openHostLog(config.logs, logSettingsOf(config), config.dev ? terminalWriter(join(config.www, 'controllers')) : undefined);
  // Workers send their lines here, so this process alone reopens host.log; its workers ignore SIGHUP.
  // What a worker started from now on is given: the live settings change with a reload.
  let current = config;
  // Set once the workers are there; a worker started before then asks for `current` anyway.
  let renewWorkers = (): void => {};
  let fitPool = (_previousWorkers: number): void => {};
  reloads((settings, note, kept) => {
    const previous = current;
    current = settings;
    const reopened = log.reopen(settings);
    log[kept ? 'error' : 'notice'](sighupLine([reopened && 'host.log'], note));
    log.info(`Settings: ${describeSettings(sliceFor('host', settings))}`);
    // A limit a worker reads at its start: each is replaced by one started with it, which listens first.
    if (workersReplacedFor('host-pool', previous, settings)) renewWorkers();
    // The pool's bounds (--workers, the spare bounds, the idle timeout, --listen-backlog) are read live.
    fitPool(previous.workers);
  });
  const startedAt = new Date().toISOString();
  /** Workers whose server listens; the others show as `starting` on /status without being asked. */
  const up = new WeakSet<Worker>();
  /** Idle workers stopped by a dynamic or ondemand pool: not counted as recycled. */
  const reaped = new WeakSet<Worker>();
  // Counters of workers gone: a retiring worker's final stats, or what a crashed one last reported, so
  // no total ever falls below what /status (and so Prometheus) has been shown.
  const departed = departedNone();
  const lastReported = new WeakMap<Worker, WorkerSnapshot>();
  /** Retiring workers whose final stats are in `departed`: no longer summed as live, or they would count twice. */
  const handedOver = new WeakSet<Worker>();
  const channels = new WeakMap<Worker, IpcChannel<PoolSays, WorkerSays>>();
  const slots = new WeakMap<Worker, WorkerSlot>();
  const workerOf = new WeakMap<WorkerSlot, Worker>();
  const listened = new WeakMap<Worker, () => void>();
  /** What a worker said of its coming death (poolMessages.ts DeathCause), read from its watchdog pipe. */
  const deathCauses = new WeakMap<Worker, DeathCause>();
  /** Settles once a worker's watchdog pipe is read to its end: its death line, if any, has been read. */
  const pipeEnded = new WeakMap<Worker, Promise<void>>();
  /** The replacement delay of a worker that exited unasked: its death line is written once its pipe is read. */
  const exitDelays = new WeakMap<Worker, number>();
  /** Settles with a dead worker's fate, for the relay's requests that died with it. */
  const fates = new WeakMap<WorkerSlot, { promise: Promise<WorkerEnd>; settle: (end: WorkerEnd) => void }>();
  /** Started workers kept out of the table (--spare-workers), listening, in the order they came. */
  const spares: Worker[] = [];
  /** Spares, listening or not: a spare's 'listening' does not put it in the table. */
  const spareSet = new Set<Worker>();
  /** Exits whose cause is still being read: the table the proxies follow waits for them (it names the culprits). */
  let draining = 0;
  const quarantine = new Quarantine();
  // What a host or worker killed outright left (they name their directories for their pids): never served again.
  const stale = await removeStaleTempDirs().catch((err: Error) => {
    log.warn(`Could not look for temporary directories left by processes that are gone: ${err.message}`);
    return [];
  });
  if (stale.length > 0)
    log.notice(
      `Removed ${stale.length} temporary director${stale.length === 1 ? 'y' : 'ies'} left by processes that are gone: ${stale.join(', ')}`,
    );
  // Each worker's private socket, in a directory only this user can enter.
  const socketDir = await makeTempDir('host');
  let socketSerial = 0;
  let maxChildrenReached = 0;
  /** php-fpm's "max active processes", as the workers count themselves. */
  let maxActive = 0;
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
      const slot = slots.get(worker);
      if (slot) dispatcher.remove(slot);
      // The proxies first: they stop sending it requests and close their connections to it as they end.
      publishTable();
      channels.get(worker)?.notify('retire', null);
    },
    events: {
      left(worker, how, was) {
        const slot = slots.get(worker);
        // What it ran failed with its connection; what waits in the queue does not. What it was relaying is read
        // before it is forgotten: the death line says what became of each.
        const relayed = slot ? [...slot.running] : [];
        if (slot) dispatcher.gone(slot);
        const unasked = was === 'ready' && !workers.stopped;
        draining += 1;
        const late = new Promise<void>((resolve) => setTimeout(resolve, DRAIN_MS).unref());
        void Promise.race([pipeEnded.get(worker), late]).then(() => {
          draining -= 1;
          const cause = deathCauses.get(worker);
          if (slot) {
            if (unasked) {
              exitedUnasked.splice(0, exitedUnasked.push(slot.pid) - EXITS_PUBLISHED);
              if (cause) culprits.set(slot.pid, cause.requestId);
              for (const pid of culprits.keys()) if (!exitedUnasked.includes(pid)) culprits.delete(pid);
            }
            fateOf(slot).settle(unasked ? { died: true, culprit: cause?.requestId } : undefined);
            publishTable();
            rm(slot.socketPath, { force: true }).catch(() => undefined);
          }
          const delay = exitDelays.get(worker);
          if (delay !== undefined) died(worker, how, delay, cause, relayed, slot?.blockedRunning ?? []);
        });
        const last = lastReported.get(worker);
        if (last) addDeparted(departed, last);
        // A worker killed mid-request could not delete that request's uploads.
        const pid = worker.process.pid;
        if (pid !== undefined)
          removeTempDirsOf('upload', pid).catch((err: Error) => log.error(`Could not delete the uploads of worker ${pid}: ${err.message}`));
        if (was === 'retiring' && !workers.stopped && !reaped.has(worker)) departed.restarts.recycled += 1;
      },
      // Its line waits for its watchdog pipe's last lines (left()).
      exited(worker, _how, delay) {
        departed.restarts.exited += 1;
        exitDelays.set(worker, delay);
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
  const starting = () => serving().filter((w) => !up.has(w)).length;
  /**
   * The proxy's readiness probe asks this narrow question: a worker listens that can take a request now (not retiring,
   * not blocked, below --worker-concurrency); ondemand starts one.
   */
  const ready = () => current.pm === 'ondemand' || spareSlots().length > 0;

  function reachedMaxChildren(): void {
    if (warnedMaxChildren) return;
    warnedMaxChildren = true;
    maxChildrenReached += 1;
    log.warn(`[pool extqs-host] server reached max_children setting (${current.workers}), consider raising it`);
  }

  const dispatcher = new Dispatcher(config.listenBacklog, config.workerConcurrency, socketDir, config.spoolMaxSize, {
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
    // Counted in the pool's own totals, as the worker that answered it before counted it.
    answerWithoutWorker: answerMissingController(join(config.www, 'controllers'), log, () => countMissingAnswered(departed)),
    noIdleWorker() {
      if (config.pm !== 'ondemand' || workers.stopped) return;
      // One start per waiting request that no starting worker will take.
      if (starting() > dispatcher.queued) return;
      if (serving().length >= current.workers) return reachedMaxChildren();
      workers.grow(1);
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
    fateOf(slot) {
      const wait = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), FATE_WAIT_MS).unref());
      return Promise.race([fateOf(slot).promise, wait]);
    },
    whenIdle(slot) {
      const worker = workerOf.get(slot);
      const channel = worker && channels.get(worker);
      if (!worker || !channel) return Promise.reject(new Error('gone'));
      return channel.request('idle', null, idleWaitMs()).then(
        () => undefined,
        (err: NodeJS.ErrnoException) => {
          // Only one that did not answer in time is recycled. A send that failed (EPIPE: killed by its watchdog,
          // not yet reaped) or a closed channel means it is dying; its exit is handled where it exits.
          if (err.code === undefined && workers.handles.includes(worker) && worker.isConnected())
            retire(worker, `still busy ${idleWaitMs()} ms after its request ended: ${err.message}`);
          throw err;
        },
      );
    },
  });

  let processManagerSettings = describeProcessManager(config);

  /** php-fpm's pool fields; idle and active as the workers count themselves, since a proxy sends most requests straight to them. */
  function poolFields(snapshots: readonly WorkerSnapshot[]): PoolFields {
    const active = snapshots.filter((s) => s.state === 'busy').length;
    maxActive = Math.max(maxActive, active, dispatcher.maxActive);
    return {
      processManager: config.pm,
      processManagerSettings,
      workerConcurrency: current.workerConcurrency,
      listenQueue: dispatcher.queued,
      maxListenQueue: dispatcher.maxQueued,
      listenQueueLen: dispatcher.bound,
      idleProcesses: snapshots.filter((s) => s.state === 'idle').length,
      activeProcesses: active,
      blockedProcesses: dispatcher.serving().filter((slot) => slot.blocked).length,
      requestsInFlight: snapshots.reduce((sum, s) => sum + s.inFlight, 0),
      totalProcesses: workers.handles.length,
      maxActiveProcesses: maxActive,
      maxChildrenReached,
    };
  }

  async function poolStatus(full: boolean) {
    const snapshots = await Promise.all(workers.handles.filter((w) => !handedOver.has(w)).map(snapshotOf));
    return summarize(process.pid, startedAt, snapshots, departed, poolFields(snapshots), full);
  }

  /**
   * Since when each worker has run nothing, as it last said: requests a proxy sends it directly pass the
   * primary by, so a dynamic or ondemand pool asks its workers (once a second) before it stops an idle one.
   */
  const quietSince = new WeakMap<Worker, { requests: number; since: number }>();
  function observed(worker: Worker, snapshot: WorkerSnapshot): void {
    const last = quietSince.get(worker);
    if (snapshot.inFlight > 0 || !last || last.since === Infinity || last.requests !== snapshot.requests)
      quietSince.set(worker, { requests: snapshot.requests, since: snapshot.inFlight > 0 ? Infinity : performance.now() });
  }

  /** Workers running nothing, with since when, the one idle longest first (ondemand and dynamic stop those first). */
  function idleSlots(): { slot: WorkerSlot; since: number }[] {
    return dispatcher
      .serving()
      .filter((slot) => slot.inFlight === 0)
      .map((slot) => ({ slot, since: Math.max(slot.idleSince, quietSince.get(workerOf.get(slot)!)?.since ?? 0) }))
      .filter(({ since }) => since !== Infinity)
      .sort((a, b) => a.since - b.since);
  }

  /** Workers below --worker-concurrency (all of them when it is 0): Passenger starts another only when none is. */
  const spareSlots = () =>
    dispatcher.serving().filter((slot) => !slot.blocked && (current.workerConcurrency === 0 || slot.inFlight < current.workerConcurrency));

  /** The last workers that exited unasked, for the proxies: what they had sent there died with them. */
  const exitedUnasked: number[] = [];
  /** Of those, the ones whose death has a known cause: the request that caused it. */
  const culprits = new Map<number, string>();
  /** Proxies on this machine following the table of workers (WORKERS_PATH). */
  const followers = new Set<ServerResponse>();
  function workerTable(): WorkerTable {
    // A host on TCP may be on another machine than its proxies: its workers' unix sockets are not theirs to reach.
    const workers = config.socket
      ? dispatcher
          .serving()
          .map((slot) => ({ pid: slot.pid, socket: slot.socketPath, blocked: slot.blocked, running: slot.blockedRunning }))
      : [];
    return { concurrency: current.workerConcurrency, workers, exited: exitedUnasked, culprits: Object.fromEntries(culprits) };
  }
  function publishTable(): void {
    // A worker's exit is published once its cause is read: a proxy must not take it for a retirement meanwhile.
    if (followers.size === 0 || draining > 0) return;
    const line = `${JSON.stringify(workerTable())}\n`;
    for (const res of followers) res.write(line);
  }

  function snapshotOf(worker: Worker): Promise<WorkerSnapshot> {
    // One that does not answer (blocked, or dying) counts what it last reported: no total ever goes back.
    const last = lastReported.get(worker);
    const placeholder = (state: 'starting' | 'unresponsive'): WorkerSnapshot => ({
      pid: worker.process.pid ?? 0,
      state,
      requests: last?.requests ?? 0,
      inFlight: 0,
      lastRequest: last?.lastRequest,
      lastDurationMs: last?.lastDurationMs,
      rss: last?.rss ?? 0,
      startedAt: last?.startedAt ?? '',
      controllers: last?.controllers ?? {},
    });
    const channel = channels.get(worker);
    if (!up.has(worker) || !channel) return Promise.resolve(placeholder('starting'));
    return channel.request('stats', null, SNAPSHOT_TIMEOUT_MS).then(
      (snapshot) => {
        lastReported.set(worker, snapshot);
        observed(worker, snapshot);
        return snapshot;
      },
      () => placeholder('unresponsive'),
    );
  }

  const writeWireEntry = (entry: WireHostEntry) => log.write({ ...entry, time: new Date(entry.time) });

  function listenTo(worker: Worker): void {
    const channel = new IpcChannel<PoolSays, WorkerSays>(childEndpoint(worker.process));
    channels.set(worker, channel);
    channel.answer('config', () => ({
      config: current,
      socket: slots.get(worker)!.socketPath,
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
      lastReported.delete(worker);
      handedOver.add(worker);
      addDeparted(departed, snapshot);
    });
    channel.answer('status', ({ full }) => poolStatus(full));
    channel.on('listening', () => {
      up.add(worker);
      if (spareSet.has(worker)) return void spareListens(worker);
      // One retired while it started (the pool was made smaller) takes no request.
      if (!workers.isRetiring(worker)) {
        dispatcher.add(slots.get(worker)!);
        publishTable();
      }
      listened.get(worker)?.();
    });
    channel.on('retire-me', ({ reason, now }) => {
      const slot = slots.get(worker);
      if (now && slot && !workers.stopped) {
        dispatcher.remove(slot);
        publishTable();
      }
      retire(worker, reason);
    });
    // The watchdog thread's line, written while the worker's thread (and its IPC) was blocked.
    const lines = createInterface({ input: worker.process.stdio[WATCHDOG_LOG_FD] as Readable });
    pipeEnded.set(worker, new Promise((resolve) => lines.once('close', resolve)));
    lines.on('line', (line) => {
      try {
        const said = JSON.parse(line) as WatchdogLine;
        if ('blocked' in said) return blockedChanged(worker, said.blocked, said.running);
        if ('death' in said) return void deathCauses.set(worker, said.death);
        writeWireEntry(said);
      } catch {
        log.error(`Unreadable line from the watchdog of worker ${worker.process.pid}: ${line}`);
      }
    });
  }

  function fateOf(slot: WorkerSlot) {
    let known = fates.get(slot);
    if (!known) {
      let settle!: (end: WorkerEnd) => void;
      const promise = new Promise<WorkerEnd>((resolve) => (settle = resolve));
      fates.set(slot, (known = { promise, settle }));
    }
    return known;
  }

  /**
   * One line for a worker that died unasked: its cause, the request it is attributed to, what became of each request
   * the primary relayed to it (a proxy's error.log names those it had sent the worker directly); then its quarantine.
   */
  function died(worker: Worker, how: string, delay: number, cause: DeathCause | undefined, relayed: Relayed[], blocked: string[]): void {
    const end: WorkerEnd = { died: true, culprit: cause?.requestId };
    const outcomes = relayed.map(({ label, requestId, resendable }) => {
      const again = sendAgainAfterLoss({ requestId: requestId ?? '', resendable, resent: false, sentMs: 0 }, end);
      return `${label} (${requestId ? `req ${requestId}, ` : ''}${again ? 'sent again' : 'failed'})`;
    });
    const ran = [
      outcomes.length > 0 ? `It was relaying ${outcomes.join(', ')}` : 'It was relaying nothing',
      ...(blocked.length > 0 ? [`blocked, it was running requests ${blocked.join(', ')}`] : []),
    ].join('; ');
    const why = cause ? `${cause.cause}, in request ${cause.requestId}, which is not sent again` : unknownCause(how);
    log.error(
      `Worker ${worker.process.pid} exited with ${how}; starting a new one${delay ? ` in ${delay} ms` : ''}. Cause: ${why}. ${ran}; ` +
        'a proxy sends each other GET or HEAD without a body that it had sent there to another worker once',
      cause?.requestId,
    );
    const inFlight = relayed.flatMap(({ label }) => {
      const route = routeController(label.slice(label.indexOf(' ') + 1));
      return route.kind === 'controller' ? [route.name] : [];
    });
    const held = quarantine.death(Date.now(), { controller: cause?.controller, inFlight });
    if (!held) return;
    log.error(
      `Controller ${held.controller} is quarantined: ${QUARANTINE_DEATHS} worker deaths within ${QUARANTINE_WITHIN_MS / 1000} s ${held.reason === 'attributed' ? 'caused by its calls' : 'with it alone in flight'}; ` +
        `its requests are answered 503 without running until its file or one of its imports changes, or for ${Math.round((held.until - Date.now()) / 1000)} s`,
    );
    // Spares too: one takes a place with what every worker knows.
    for (const live of [...workers.handles, ...spareSet])
      channels.get(live)?.notify('quarantine', { controller: held.controller, until: held.until });
  }

  /** A worker saw a quarantined controller's files change: every worker runs it again. */
  function lifted(controller: string): void {
    if (!quarantine.lift(controller)) return;
    log.notice(`Controller ${controller} is out of quarantine: its files changed`);
    for (const live of [...workers.handles, ...spareSet]) channels.get(live)?.notify('quarantine-lifted', { controller });
  }

  /** A worker's event loop stopped turning while it ran calls, or turns again: it is routed around meanwhile. */
  function blockedChanged(worker: Worker, blocked: boolean, running: string[]): void {
    const slot = slots.get(worker);
    if (!slot || !slot.accepting) return;
    slot.blockedRunning = running;
    if (blocked)
      log.warn(
        `Worker ${worker.process.pid} is blocked (its event loop has not turned for ${BLOCKED_AFTER_MS} ms): it is sent no new request until it turns again`,
      );
    else log.info(`Worker ${worker.process.pid} turns again: it takes requests`);
    dispatcher.setBlocked(slot, blocked);
    publishTable();
  }

  /** Replaces a worker that asked to: the old one keeps serving until the new one listens, so no request finds nobody. */
  function retire(worker: Worker, reason: string): void {
    if (workers.stopped || workers.isRetiring(worker)) return;
    log.info(`Recycling worker ${worker.process.pid} (${reason}): starting its replacement first`);
    workers.recycle(worker);
  }

  renewWorkers = () => {
    // Spares have the old settings: they go first, so that none takes a place; new ones start after.
    void stopSpares([...spareSet]);
    for (const worker of serving()) retire(worker, 'new settings from SIGHUP');
    fitSpareWorkers();
  };

  /** After a SIGHUP: the pool's bounds as read again; workers past --workers retired (idle ones first), a static pool filled. */
  fitPool = (previousWorkers) => {
    dispatcher.bound = current.listenBacklog;
    dispatcher.spoolMax = current.spoolMaxSize;
    dispatcher.setConcurrency(current.workerConcurrency);
    publishTable();
    processManagerSettings = describeProcessManager(current);
    fitSpareWorkers();
    // Only a new count resizes: a worker being restarted after an exit is not yet counted as serving.
    if (current.workers === previousWorkers) return;
    const idle = new Set(idleSlots().map(({ slot }) => workerOf.get(slot)));
    const byIdleFirst = serving().sort((a, b) => Number(idle.has(b)) - Number(idle.has(a)));
    for (const worker of byIdleFirst.slice(current.workers)) {
      log.info(`Stopping worker ${worker.process.pid} (--workers is now ${current.workers})`);
      workers.retire(worker);
    }
    if (current.pm === 'static' && serving().length < current.workers) {
      log.info(`Starting ${current.workers - serving().length} more workers (--workers is now ${current.workers})`);
      workers.grow(current.workers - serving().length);
    }
  };

  /** A dynamic or ondemand pool stops an idle worker it does not need. */
  function reap(worker: Worker, why: string): void {
    reaped.add(worker);
    log.info(`Stopping idle worker ${worker.process.pid} (${why})`);
    workers.retire(worker);
  }

  /** Starts a worker on a private socket of its own; it is ready once it says it listens there. A spare takes the place at once. */
  function fork(): Launched<Worker, void> {
    const spare = spares.shift();
    if (spare) return handOver(spare);
    const worker = cluster.fork();
    const slot = new WorkerSlot(worker.process.pid ?? 0, join(socketDir, `w${++socketSerial}.sock`));
    slots.set(worker, slot);
    workerOf.set(slot, worker);
    listenTo(worker);
    const ready = new Promise<void>((resolve, reject) => {
      listened.set(worker, resolve);
      worker.once('exit', () => reject(new Error(`worker ${worker.process.pid} exited before listening`)));
    });
    return { handle: worker, process: worker.process, ready };
  }

  /** Starts a spare (--spare-workers): listening, out of the table, until it takes a place. */
  function startSpare(): void {
    const worker = cluster.fork();
    const slot = new WorkerSlot(worker.process.pid ?? 0, join(socketDir, `w${++socketSerial}.sock`));
    slots.set(worker, slot);
    workerOf.set(slot, worker);
    spareSet.add(worker);
    listenTo(worker);
    worker.once('exit', (code, signal) => {
      if (!spareSet.delete(worker)) return;
      const at = spares.indexOf(worker);
      if (at >= 0) spares.splice(at, 1);
      rm(slot.socketPath, { force: true }).catch(() => undefined);
      if (workers.stopped) return;
      // Paced: a spare that cannot start must not start again in a loop.
      log.error(
        `Spare worker ${worker.process.pid} exited with ${signal ? `signal ${signal}` : `code ${code}`}; starting a new one in 1000 ms`,
      );
      setTimeout(() => {
        if (!workers.stopped && spareSet.size < current.spareWorkers) startSpare();
      }, 1_000).unref();
    });
  }

  /** A spare listens: it loads the controllers the pool's workers serve, and waits. */
  function spareListens(worker: Worker): void {
    if (workers.stopped || spareSet.size > current.spareWorkers) return void worker.process.kill('SIGTERM');
    spares.push(worker);
    log.info(`Worker ${worker.process.pid} is spare: it takes the place of the next worker that dies or retires`);
    preloadSpares();
  }

  /** Each spare loads the controllers the pool's workers have served (once a second while there are spares). */
  function preloadSpares(): void {
    if (spares.length === 0) return;
    void Promise.all(
      serving()
        .filter((w) => up.has(w))
        .map(snapshotOf),
    ).then((snapshots) => {
      const controllers = [...new Set(snapshots.flatMap((s) => Object.keys(s.controllers)))].filter((name) => /^[A-Za-z_]\w*$/.test(name));
      for (const spare of spares) channels.get(spare)?.notify('preload', { controllers });
    });
  }

  /** A spare takes a place in the pool at once; its own replacement starts behind it. */
  function handOver(spare: Worker): Launched<Worker, void> {
    spareSet.delete(spare);
    log.info(`Spare worker ${spare.process.pid} takes a place in the pool`);
    dispatcher.add(slots.get(spare)!);
    publishTable();
    startSpare();
    return { handle: spare, process: spare.process, ready: Promise.resolve() };
  }

  /** Starts or stops spares to match --spare-workers. */
  function fitSpareWorkers(): void {
    for (let n = spareSet.size; n < current.spareWorkers; n++) startSpare();
    void stopSpares(spares.slice(current.spareWorkers));
  }

  /** Stops `leaving` spares, forgotten first: their exits are not spares' deaths to make up for. Resolves once they exited. */
  function stopSpares(leaving: Worker[]): Promise<unknown> {
    const exits = leaving.map((spare): Promise<unknown> => {
      spareSet.delete(spare);
      const at = spares.indexOf(spare);
      if (at >= 0) spares.splice(at, 1);
      return spare.process.exitCode === null && spare.process.signalCode === null
        ? new Promise((resolve) => spare.once('exit', resolve))
        : Promise.resolve();
    });
    for (const spare of leaving) spare.process.kill('SIGTERM');
    return Promise.all(exits);
  }

  // php-fpm's maintenance, once a second.
  let spawnRate = 1;
  let maintaining = false;
  async function maintain(): Promise<void> {
    if (workers.stopped || maintaining) return;
    maintaining = true;
    try {
      // Proxies send requests straight to the workers: only these know what they run.
      if (current.workerConcurrency === 0) await Promise.all(dispatcher.serving().map((slot) => snapshotOf(workerOf.get(slot)!)));
      if (!workers.stopped) fitSpares();
    } finally {
      maintaining = false;
    }
  }

  function fitSpares(): void {
    const idle = idleSlots();
    if (config.pm === 'ondemand') {
      // The one idle longest, past the timeout (php-fpm stops one a second).
      const oldest = idle[0];
      if (oldest && performance.now() - oldest.since > current.workerIdleTimeout * 1000) {
        const worker = workerOf.get(oldest.slot);
        if (worker) reap(worker, `idle more than ${current.workerIdleTimeout} s`);
      }
      if (spareSlots().length > 0) warnedMaxChildren = false;
      return;
    }
    // dynamic
    if (idle.length > current.maxSpareWorkers) {
      const worker = workerOf.get(idle[0].slot);
      if (worker) reap(worker, `more than ${current.maxSpareWorkers} idle`);
      spawnRate = 1;
      return;
    }
    // Spare: below the concurrency limit (idle, at one request a worker, as php-fpm counts it).
    const spare = spareSlots().length + starting();
    if (spare >= current.minSpareWorkers) {
      spawnRate = 1;
      warnedMaxChildren = false;
      return;
    }
    const room = current.workers - serving().length;
    if (room <= 0) return reachedMaxChildren();
    const count = Math.min(spawnRate, current.minSpareWorkers - spare, room);
    workers.grow(count);
    spawnRate = Math.min(spawnRate * 2, MAX_SPAWN_RATE);
  }

  /** /status, /ping and /ready are the pool's own (php-fpm's master answers the first two), and /workers; the rest goes to a worker. */
  function serve(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '';
    const path = url.split('?', 1)[0];
    if (req.method === 'GET' && path === WORKERS_PATH) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
      res.write(`${JSON.stringify(workerTable())}\n`);
      followers.add(res);
      res.once('close', () => followers.delete(res));
      return;
    }
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
    serve,
    (message) => log.error(message),
  );
  // Node keeps the first 2,000 fields and drops the rest without a word; the proxy bounds them
  // (--max-header-fields, up to 10,000), so every field it forwards reaches the controller.
  server.maxHeadersCount = 0;
  server.on('clientError', refuseUnreadable(log));
  const initial = config.pm === 'static' ? config.workers : config.pm === 'dynamic' ? config.startWorkers : 0;
  const hardStopMs = config.shutdownTimeout * 1000 + HARD_STOP_MS;
  try {
    await workers.start(initial);
  } catch (err) {
    await workers.stop('SIGTERM', hardStopMs);
    throw err;
  }
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
  const url = config.socket
    ? `unix:${config.socket}`
    : formatUpstream({ kind: 'tcp', host: config.hostListen, port, ...(admission.tls && { tls: true }) });
  const maintenance = config.pm === 'static' ? undefined : setInterval(() => void maintain(), MAINTENANCE_MS);
  fitSpareWorkers();
  const sparesKept = setInterval(preloadSpares, MAINTENANCE_MS);
  log.notice(
    `Host pool ${process.pid} serving ${config.www}/controllers on ${url} with ${config.pm === 'static' ? `${config.workers} workers` : `pm ${config.pm}, up to ${config.workers} workers, ${initial} started`}`,
  );
  log.info(`Settings: ${describeSettings(sliceFor('host', config))}`);
  process.stdout.write(`${readyLine(url)}\n`);
  notifyReady((message) => log.error(message));

  onShutdownSignal(async (reason) => {
    clearInterval(maintenance);
    clearInterval(sparesKept);
    log.notice(`Host pool ${process.pid} shutting down (${reason})`);
    // No new connections from now on: a proxy that connects finds no socket (a connect failure, which
    // it retries on another host) instead of a backlog that nobody accepts and that is reset when this
    // process exits (a reset before headers, which the proxy must answer 500).
    if (config.socket) await rm(config.socket, { force: true });
    // The proxies stop sending requests straight to the workers: what they send next finds no socket too.
    for (const res of followers) res.end();
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
      const slot = slots.get(worker);
      if (slot) dispatcher.gone(slot);
    }
    // A signal, not a message: a worker still starting has no message handler yet, and would miss a
    // 'retire' (a stop during a recycle then waited for the hard stop). SIGTERM retires it the same way.
    const sparesGone = stopSpares([...spareSet]);
    await workers.stop('SIGTERM', hardStopMs);
    await sparesGone;
    await closed;
    if (config.socket) await rm(config.socket, { force: true });
    await rm(socketDir, { recursive: true, force: true });
    await log.drain();
  });
}
