// The host's primary process (php-fpm's master): forks --workers workers that share one listening
// socket, replaces a worker that dies, recycles one that asks (max requests, an overrun) by starting its
// replacement first, answers /status for the whole pool, and stops them all on SIGTERM.
import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import { chmod, rm } from 'node:fs/promises';
import { formatUpstream, logSettingsOf, type Config } from '../common/config.ts';
import { readyLine } from '../common/ready.ts';
import { onReload } from '../common/reload.ts';
import { onShutdownSignal } from '../common/shutdown.ts';
import { openHostLog } from './hostLog.ts';
import type { ToPrimary, ToWorker } from './poolMessages.ts';
import { addDeparted, departedNone, summarize, type WorkerSnapshot } from './stats.ts';

const SNAPSHOT_TIMEOUT_MS = 1_000;
/** More unexpected exits than this within CRASH_WINDOW_MS and replacements wait RESTART_DELAY_MS. */
const CRASH_WINDOW_MS = 10_000;
const RESTART_DELAY_MS = 1_000;

export async function runPool(config: Config, argv: string[]): Promise<void> {
  const log = openHostLog(config.logs, logSettingsOf(config));
  // Workers send their lines here, so this process alone reopens host.log; its workers ignore SIGHUP.
  let json = config.logFormat === 'json';
  onReload(argv, config, (settings, note, kept) => {
    const reopened = log.reopen(settings);
    json = settings.logFormat === 'json';
    for (const worker of live) if (up.has(worker)) send(worker, { type: 'log-format', json });
    log[kept ? 'error' : 'notice'](`SIGHUP received: ${reopened ? 'reopened host.log' : 'host.log could not be reopened'}; ${note}`);
  });
  const startedAt = new Date().toISOString();
  const live = new Set<Worker>();
  /** Workers whose server listens: only they have their message handlers in place (IPC messages to a
   *  process that has not attached one yet are dropped). */
  const up = new WeakSet<Worker>();
  const retiring = new Set<Worker>();
  const crashes: number[] = [];
  // Counters of workers gone: from a retiring worker's final stats; a crashed worker's are lost.
  const departed = departedNone();
  let stopping = false;
  let nextSnapshotId = 0;
  const pendingSnapshots = new Map<number, (snapshot: WorkerSnapshot) => void>();

  function send(worker: Worker, message: ToWorker): void {
    if (worker.isConnected()) worker.send(message);
  }

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
    if (!up.has(worker)) return Promise.resolve(placeholder('starting'));
    return new Promise((resolve) => {
      const id = nextSnapshotId++;
      const timer = setTimeout(() => {
        pendingSnapshots.delete(id);
        resolve(placeholder('unresponsive'));
      }, SNAPSHOT_TIMEOUT_MS);
      pendingSnapshots.set(id, (snapshot) => {
        clearTimeout(timer);
        pendingSnapshots.delete(id);
        resolve(snapshot);
      });
      send(worker, { type: 'stats?', id });
    });
  }

  function onMessage(worker: Worker, message: ToPrimary): void {
    if (message.type === 'log') {
      for (const entry of message.entries) log.write({ ...entry, time: new Date(entry.time) });
      if (message.flush !== undefined) send(worker, { type: 'log-flushed', id: message.flush });
    } else if (message.type === 'stats') {
      pendingSnapshots.get(message.id)?.(message.snapshot);
    } else if (message.type === 'final-stats') {
      addDeparted(departed, message.snapshot);
    } else if (message.type === 'status?') {
      void Promise.all([...live].map(snapshotOf)).then((snapshots) =>
        send(worker, { type: 'status', id: message.id, status: summarize(process.pid, startedAt, snapshots, departed, message.full) }),
      );
    } else if (message.type === 'retire-me') {
      if (stopping || retiring.has(worker)) return;
      retiring.add(worker);
      log.info(`Recycling worker ${worker.process.pid} (${message.reason}): starting its replacement first`);
      // The old worker keeps serving until the new one listens, so no request finds nobody.
      fork(true).then(
        () => send(worker, { type: 'retire' }),
        (err) => {
          // The old worker keeps serving; it is recycled when a later replacement starts.
          log.error(`Could not start a replacement for worker ${worker.process.pid}: ${String(err)}; trying again in ${RESTART_DELAY_MS} ms`);
          retiring.delete(worker);
          setTimeout(() => {
            if (live.has(worker)) onMessage(worker, message);
          }, RESTART_DELAY_MS);
        },
      );
    }
  }

  /** Starts a worker; `recycling` when it replaces one that asked to retire (its failure is retried there). */
  function fork(recycling = false): Promise<{ worker: Worker; port: number }> {
    const worker = cluster.fork();
    let listening = false;
    live.add(worker);
    worker.on('message', (message: ToPrimary) => onMessage(worker, message));
    worker.once('exit', (code, signal) => {
      live.delete(worker);
      const wasRetiring = retiring.delete(worker);
      if (stopping || wasRetiring || (recycling && !listening)) return;
      const now = Date.now();
      crashes.push(now);
      while (crashes.length > 0 && crashes[0] < now - CRASH_WINDOW_MS) crashes.shift();
      const delay = crashes.length > config.workers * 2 ? RESTART_DELAY_MS : 0;
      log.error(`Worker ${worker.process.pid} exited with ${signal ? `signal ${signal}` : `code ${code}`}; starting a new one${delay ? ` in ${delay} ms` : ''}`);
      setTimeout(() => {
        if (!stopping) fork().catch((err) => log.error(`Could not start a worker: ${String(err)}`));
      }, delay);
    });
    return new Promise((resolve, reject) => {
      worker.once('listening', (address) => {
        listening = true;
        up.add(worker);
        if (json !== (config.logFormat === 'json')) send(worker, { type: 'log-format', json });
        resolve({ worker, port: address.port });
      });
      worker.once('exit', () => reject(new Error(`worker ${worker.process.pid} exited before listening`)));
    });
  }

  // Each worker accepts on the shared socket itself. With the default round-robin the primary accepts
  // and hands each connection to a worker; one handed to a worker that just died is neither served nor
  // closed, and its request hung until the proxy's timeout (seen in the SIGKILL test).
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  // A socket file left by a host that was killed would make listen() fail with EADDRINUSE.
  if (config.socket) await rm(config.socket, { force: true });
  const first = await Promise.all(Array.from({ length: config.workers }, fork));
  if (config.socket) await chmod(config.socket, 0o600);
  const url = config.socket ? `unix:${config.socket}` : formatUpstream({ kind: 'tcp', host: config.hostListen, port: first[0].port });
  log.notice(`Host pool ${process.pid} serving ${config.www}/controllers on ${url} with ${config.workers} workers`);
  process.stdout.write(`${readyLine(url)}\n`);

  onShutdownSignal(async (reason) => {
    stopping = true;
    log.notice(`Host pool ${process.pid} shutting down (${reason})`);
    const exits = [...live].map((worker) => once(worker, 'exit'));
    // A signal, not a message: a worker still starting has no message handler yet, and would miss a
    // 'retire' (a stop during a recycle then waited for the hard stop). SIGTERM retires it the same way.
    for (const worker of live) worker.process.kill('SIGTERM');
    // Workers cut their connections at the shutdown timeout (worker.ts); this is for one that hangs.
    const hardStop = setTimeout(() => {
      for (const worker of live) worker.process.kill('SIGKILL');
    }, config.shutdownTimeout * 1000 + 5_000);
    await Promise.all(exits);
    clearTimeout(hardStop);
    if (config.socket) await rm(config.socket, { force: true });
    await log.drain();
  });
}
