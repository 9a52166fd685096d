// The host's primary process (php-fpm's master): forks --workers workers that share one listening
// socket, replaces a worker that dies, recycles one that asks (max requests, an overrun) by starting its
// replacement first, answers /status for the whole pool, and stops them all on SIGTERM.
import cluster, { type Worker } from 'node:cluster';
import { rmSync } from 'node:fs';
import { chmod, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describeSettings, logSettingsOf, sliceFor } from '../common/config.ts';
import { siblingFile } from '../common/entryFile.ts';
import { childEndpoint, IpcChannel } from '../common/ipc.ts';
import { deliver } from '../common/logRelay.ts';
import { readyLine } from '../common/ready.ts';
import { notifyReady } from '../common/serviceManager.ts';
import { terminalWriter } from '../common/terminal.ts';
import { poolPace } from '../common/restartPace.ts';
import type { Reloads } from '../common/reload.ts';
import { sighupLine } from '../common/reloadResolver.ts';
import { formatUpstream } from '../common/settingParsers.ts';
import type { HostConfig } from '../common/settings.ts';
import { onShutdownSignal } from '../common/shutdown.ts';
import { Supervisor, type Launched } from '../common/supervisor.ts';
import { openHostLog } from './hostLogFile.ts';
import { WATCHDOG_LOG_FD, type PoolSays, type WireHostEntry, type WorkerSays } from './poolMessages.ts';
import { removeUploadsOf } from './uploadDir.ts';
import { addDeparted, departedNone, summarize, type WorkerSnapshot } from './stats.ts';

const SNAPSHOT_TIMEOUT_MS = 1_000;
/** Workers cut their connections at --shutdown-timeout (worker.ts); one that hangs past it by this much is killed. */
const HARD_STOP_MS = 5_000;

export async function runPool(config: HostConfig, reloads: Reloads<HostConfig>): Promise<void> {
  const log = openHostLog(config.logs, logSettingsOf(config), config.dev ? terminalWriter(join(config.www, 'controllers')) : undefined);
  // Workers send their lines here, so this process alone reopens host.log; its workers ignore SIGHUP.
  // What a worker started from now on is given: the live settings change with a reload.
  let current = config;
  reloads((settings, note, kept) => {
    current = settings;
    const reopened = log.reopen(settings);
    log[kept ? 'error' : 'notice'](sighupLine([reopened && 'host.log'], note));
    log.info(`Settings: ${describeSettings(sliceFor('host', settings))}`);
  });
  const startedAt = new Date().toISOString();
  /** Workers whose server listens; the others show as `starting` on /status without being asked. */
  const up = new WeakSet<Worker>();
  // Counters of workers gone: a retiring worker's final stats, or what a crashed one last reported, so
  // no total ever falls below what /status (and so Prometheus) has been shown.
  const departed = departedNone();
  const lastReported = new WeakMap<Worker, WorkerSnapshot>();
  /** Retiring workers whose final stats are in `departed`: no longer summed as live, or they would count twice. */
  const handedOver = new WeakSet<Worker>();
  const channels = new WeakMap<Worker, IpcChannel<PoolSays, WorkerSays>>();
  // The handles are cluster workers; the events are host.log's lines and /status's counters.
  const workers: Supervisor<Worker, number> = new Supervisor({
    launch: fork,
    pace: poolPace(config.workers),
    // A message, not a signal: it comes once the successor listens, when the old worker's handler is set.
    retire: (worker) => channels.get(worker)?.notify('retire', null),
    events: {
      left(worker, _how, was) {
        const last = lastReported.get(worker);
        if (last) addDeparted(departed, last);
        // A worker killed mid-request could not delete that request's uploads.
        const pid = worker.process.pid;
        if (pid !== undefined)
          removeUploadsOf(pid).catch((err: Error) => log.error(`Could not delete the uploads of worker ${pid}: ${err.message}`));
        if (was === 'retiring' && !workers.stopped) departed.restarts.recycled += 1;
      },
      exited(worker, how, delay) {
        departed.restarts.exited += 1;
        log.error(`Worker ${worker.process.pid} exited with ${how}; starting a new one${delay ? ` in ${delay} ms` : ''}`);
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

  function snapshotOf(worker: Worker): Promise<WorkerSnapshot> {
    const placeholder = (state: 'starting' | 'unresponsive'): WorkerSnapshot => ({
      pid: worker.process.pid ?? 0,
      state,
      requests: 0,
      inFlight: 0,
      lastRequest: undefined,
      lastDurationMs: undefined,
      rss: 0,
      startedAt: '',
      controllers: {},
    });
    const channel = channels.get(worker);
    if (!up.has(worker) || !channel) return Promise.resolve(placeholder('starting'));
    return channel.request('stats', null, SNAPSHOT_TIMEOUT_MS).then(
      (snapshot) => {
        lastReported.set(worker, snapshot);
        return snapshot;
      },
      () => placeholder('unresponsive'),
    );
  }

  const writeWireEntry = (entry: WireHostEntry) => log.write({ ...entry, time: new Date(entry.time) });

  function listenTo(worker: Worker): void {
    const channel = new IpcChannel<PoolSays, WorkerSays>(childEndpoint(worker.process));
    channels.set(worker, channel);
    channel.answer('config', () => current);
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
    channel.answer('status', async ({ full }) =>
      summarize(
        process.pid,
        startedAt,
        await Promise.all(workers.handles.filter((w) => !handedOver.has(w)).map(snapshotOf)),
        departed,
        full,
      ),
    );
    channel.on('retire-me', ({ reason }) => retire(worker, reason));
    // The watchdog thread's line, written while the worker's thread (and its IPC) was blocked.
    createInterface({ input: worker.process.stdio[WATCHDOG_LOG_FD] as Readable }).on('line', (line) => {
      try {
        writeWireEntry(JSON.parse(line) as WireHostEntry);
      } catch {
        log.error(`Unreadable line from the watchdog of worker ${worker.process.pid}: ${line}`);
      }
    });
  }

  /** Replaces a worker that asked to: the old one keeps serving until the new one listens, so no request finds nobody. */
  function retire(worker: Worker, reason: string): void {
    if (workers.stopped || workers.isRetiring(worker)) return;
    log.info(`Recycling worker ${worker.process.pid} (${reason}): starting its replacement first`);
    workers.recycle(worker);
  }

  /** Starts a worker; it is ready with the port it listens on. */
  function fork(): Launched<Worker, number> {
    const worker = cluster.fork();
    listenTo(worker);
    const ready = new Promise<number>((resolve, reject) => {
      worker.once('listening', (address) => {
        up.add(worker);
        resolve(address.port);
      });
      worker.once('exit', () => reject(new Error(`worker ${worker.process.pid} exited before listening`)));
    });
    return { handle: worker, process: worker.process, ready };
  }

  // Each worker accepts on the shared socket itself. With the default round-robin the primary accepts
  // and hands each connection to a worker; one handed to a worker that just died is neither served nor
  // closed, and its request hung until the proxy's timeout (seen in the SIGKILL test).
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  // Workers take their settings from this process over IPC (not argv); fd WATCHDOG_LOG_FD is the pipe
  // their watchdog thread writes to.
  cluster.setupPrimary({
    exec: siblingFile(import.meta.url, 'workerMain'),
    args: [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc', 'pipe'],
  });
  // A socket file left by a host that was killed would make listen() fail with EADDRINUSE.
  if (config.socket) await rm(config.socket, { force: true });
  const hardStopMs = config.shutdownTimeout * 1000 + HARD_STOP_MS;
  let first: number[];
  try {
    first = await workers.start(config.workers);
  } catch (err) {
    await workers.stop('SIGTERM', hardStopMs);
    throw err;
  }
  if (config.socket) await chmod(config.socket, 0o600);
  const url = config.socket ? `unix:${config.socket}` : formatUpstream({ kind: 'tcp', host: config.hostListen, port: first[0] });
  log.notice(`Host pool ${process.pid} serving ${config.www}/controllers on ${url} with ${config.workers} workers`);
  log.info(`Settings: ${describeSettings(sliceFor('host', config))}`);
  process.stdout.write(`${readyLine(url)}\n`);
  notifyReady((message) => log.error(message));

  onShutdownSignal(async (reason) => {
    log.notice(`Host pool ${process.pid} shutting down (${reason})`);
    // No new connections from now on: a proxy that connects finds no socket (a connect failure, which
    // it retries on another host) instead of a backlog that nobody accepts and that is reset when this
    // process exits (a reset before headers, which the proxy must answer 500). Removed before the
    // workers are told, and at once: a worker that died meanwhile must not be replaced.
    if (config.socket) rmSync(config.socket, { force: true });
    // A signal, not a message: a worker still starting has no message handler yet, and would miss a
    // 'retire' (a stop during a recycle then waited for the hard stop). SIGTERM retires it the same way.
    await workers.stop('SIGTERM', hardStopMs);
    if (config.socket) await rm(config.socket, { force: true });
    await log.drain();
  });
}
