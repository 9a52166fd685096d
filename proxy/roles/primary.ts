// The proxy's primary with --proxy-workers N > 1 (nginx's master process): forks N workers that share the
// port (node:cluster), writes access.log and error.log for all of them, gathers their shares of
// /server-status and /metrics, passes SIGHUP on, replaces a worker that dies, and stops
// them all on SIGTERM. A reload that changes what only a new worker takes (its limits, timeouts,
// forwarder, upstreams…) starts new workers with it, and the old ones finish what they hold and exit;
// a new --proxy-workers starts or retires workers to that count.
import cluster, { type Address, type Worker } from 'node:cluster';
import { logSettingsOf } from '../../common/config.ts';
import { siblingFile } from '../../common/entryFile.ts';
import { childEndpoint, IpcChannel } from '../../common/ipc.ts';
import { deliver, type EntryBatch } from '../../common/logRelay.ts';
import type { Reloads } from '../../common/reload.ts';
import { poolPace } from '../../common/restartPace.ts';
import type { ProxyConfig } from '../../common/settings.ts';
import { workersReplacedFor } from '../../common/reloadResolver.ts';
import { onShutdownSignal } from '../../common/shutdown.ts';
import { Supervisor, type Launched } from '../../common/supervisor.ts';
import { accessFile, accessOfWire } from '../observe/accessLog.ts';
import { errorFile, openErrorLog } from '../observe/errorLog.ts';
import { terminalWriter } from '../../common/terminal.ts';
import { announceStart, listenerUrl, reloadedEntries, stoppingEntry } from './lifecycle.ts';
import type { MetricJson } from '../core/metricJson.ts';
import { startTimeJson } from '../observe/processShare.ts';
import { addCounts } from '../observe/proxyFigures.ts';
import type { ProxyLogEntries, ProxyPrimarySays, ProxyWorkerSays } from '../observe/workerMessages.ts';

const SHARE_TIMEOUT_MS = 1_000;
/** Workers cut their connections at --shutdown-timeout; one that hangs past it by this much is killed,
 *  within the launcher's own margin for the proxy (common/shutdown.ts). */
const HARD_STOP_MS = 2_000;

export async function runProxyPrimary(config: ProxyConfig, reloads: Reloads<ProxyConfig>): Promise<void> {
  // The workers' entries are formatted here, with the settings of the latest reload.
  const accessLines = accessFile(config.logs, logSettingsOf(config));
  const errorLines = errorFile(config.logs, logSettingsOf(config));
  const errorLog = openErrorLog(logSettingsOf(config), errorLines, config.dev ? terminalWriter() : undefined);
  let current = config;
  // Each worker's server counts its own connections: it takes its share of --max-connections (nginx's
  // worker_connections is per worker outright). The port stays the one the first workers asked for: the
  // cluster shares one listening socket per address and port asked, and a replacement asking for the port
  // it got (a reload's settings carry it after --port 0) would try to bind it a second time.
  const workerConfig = (): ProxyConfig => ({
    ...current,
    port: config.port,
    tlsPort: config.tlsPort,
    maxConnections: current.maxConnections > 0 ? Math.ceil(current.maxConnections / current.proxyWorkers) : 0,
  });
  const channels = new WeakMap<Worker, IpcChannel<ProxyPrimarySays, ProxyWorkerSays>>();
  // The handles are cluster workers: they share the port. The events are error.log's lines.
  const workers: Supervisor<Worker, Address[]> = new Supervisor({
    launch: fork,
    pace: poolPace(config.proxyWorkers),
    // Told over IPC rather than SIGTERM: a retiring worker keeps its idle connections until they end.
    retire: (worker) => (channels.get(worker) ? channels.get(worker)!.notify('retire', null) : worker.process.kill('SIGTERM')),
    events: {
      left: (worker, how, was) => {
        keepCountsOf(worker);
        if (was === 'retiring')
          errorLog.write({
            module: 'mpm_event',
            level: 'notice',
            message: `proxy worker ${worker.process.pid} retired: it finished the requests it held and exited with ${how}`,
          });
      },
      exited: (worker, how) =>
        errorLog.write({
          module: 'mpm_event',
          level: 'error',
          message: `proxy worker ${worker.process.pid} exited with ${how}; starting a new one`,
        }),
      restartFailed: (err) =>
        errorLog.write({ module: 'mpm_event', level: 'error', message: `Could not start a proxy worker: ${err.message}` }),
      replaceFailed: (worker, err, delay) =>
        errorLog.write({
          module: 'mpm_event',
          level: 'error',
          message: `Could not start a proxy worker to replace ${worker.process.pid}, which keeps serving: ${err.message}; trying again in ${delay} ms`,
        }),
    },
  });
  // The primary's own share: when the proxy started, and what workers gone had counted, as each last told
  // it: summed into every answer, so no counter that /server-status or Prometheus has been shown goes down
  // when a worker dies (nor counts twice).
  const lastTold = new WeakMap<Worker, MetricJson[]>();
  const primaryShare: MetricJson[] = [startTimeJson(new Date())];
  function keepCountsOf(worker: Worker): void {
    const metrics = lastTold.get(worker);
    if (metrics) addCounts(primaryShare, metrics);
  }

  reloads((settings, note, kept) => {
    const previous = current;
    current = settings;
    const reopened = [accessLines.reopen(settings) && 'access.log', errorLog.reopen(settings) && 'error.log'];
    for (const entry of reloadedEntries(reopened, note, kept, settings)) errorLog.write(entry);
    for (const worker of workers.handles) channels.get(worker)?.notify('reload', { config: workerConfig(), note, kept });
    replaceWorkers(workersReplacedFor('proxy-primary', previous, settings), settings.proxyWorkers);
  });

  /**
   * Brings the workers to `count`, all of them new when `renew`: the extra ones retire first; each one
   * renewed is retired once its successor listens (common/supervisor.ts), and finishes what it holds.
   */
  function replaceWorkers(renew: boolean, count: number): void {
    const serving = workers.handles.filter((worker) => !workers.isRetiring(worker));
    for (const worker of serving.slice(count)) workers.retire(worker);
    if (renew) for (const worker of serving.slice(0, count)) workers.recycle(worker);
    workers.grow(count - serving.length);
  }

  const writeEntries = (batch: EntryBatch<ProxyLogEntries>) =>
    deliver(batch, { 'access.log': (wire) => accessLines.write(accessOfWire(wire)), 'error.log': (entry) => errorLines.write(entry) });

  /** Every worker's share, and the primary's; a worker that does not answer in time is left out. */
  async function everyShare(): Promise<MetricJson[][]> {
    const asked = workers.handles.flatMap((worker) => {
      const channel = channels.get(worker);
      if (!channel) return [];
      return [
        channel.request('metrics', null, SHARE_TIMEOUT_MS).then(
          (share) => (lastTold.set(worker, share), share),
          () => undefined,
        ),
      ];
    });
    return [...(await Promise.all(asked)).filter((share) => share !== undefined), primaryShare];
  }

  function listenTo(worker: Worker): IpcChannel<ProxyPrimarySays, ProxyWorkerSays> {
    const channel = new IpcChannel<ProxyPrimarySays, ProxyWorkerSays>(childEndpoint(worker.process));
    channels.set(worker, channel);
    channel.answer('config', workerConfig);
    channel.on('log', writeEntries);
    channel.answer('flush', (batch) => {
      writeEntries(batch);
      return null;
    });
    channel.answer('all-metrics', everyShare);
    channel.answer('last-metrics', (share) => {
      lastTold.set(worker, share);
      return null;
    });
    return channel;
  }

  /** A worker listens on the plain port, then on the HTTPS one when there is a certificate. */
  const listeners = (config.tlsCert === undefined ? 1 : 2) + (config.metricsPort === undefined ? 0 : 1);

  /** Starts a worker; it is ready with the addresses it listens on, in that order. */
  function fork(): Launched<Worker, Address[]> {
    const worker = cluster.fork();
    let failure: Error | undefined;
    listenTo(worker).answer('failed', ({ message, code }) => {
      failure = Object.assign(new Error(message), { code });
      return null;
    });
    const ready = new Promise<Address[]>((resolve, reject) => {
      const addresses: Address[] = [];
      worker.on('listening', (address) => {
        if (addresses.push(address) === listeners) resolve(addresses);
      });
      worker.once('exit', () => reject(failure ?? new Error(`proxy worker ${worker.process.pid} exited before listening`)));
    });
    return { handle: worker, process: worker.process, ready };
  }

  // Round-robin: the primary accepts and hands connections out in turn. Left to the kernel (SCHED_NONE),
  // Linux wakes the same worker for most of them, and one core does the work.
  cluster.schedulingPolicy = cluster.SCHED_RR;
  cluster.setupPrimary({ exec: siblingFile(import.meta.url, 'workerMain'), args: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // Workers cut their connections at --shutdown-timeout; one that hangs past it is killed.
  const hardStopMs = config.shutdownTimeout * 1000 + HARD_STOP_MS;
  let addresses: Address[];
  try {
    [addresses] = await workers.start(config.proxyWorkers);
  } catch (err) {
    await workers.stop('SIGTERM', hardStopMs);
    await Promise.all([accessLines.drain(), errorLog.drain()]);
    throw err;
  }
  const schemes = ['http', 'https'] as const;
  const urlOf = ({ address, port }: Address, scheme: 'http' | 'https') => listenerUrl(scheme, address ?? config.listen, port);
  // A worker's --metrics-port listener is its last (serveProxy.ts).
  const metrics = config.metricsPort === undefined ? undefined : addresses.pop();
  announceStart(
    errorLog,
    config,
    addresses.map((address, i) => urlOf(address, schemes[i])),
    metrics && urlOf(metrics, 'http'),
  );

  onShutdownSignal(async (reason) => {
    errorLog.write(stoppingEntry(reason));
    await workers.stop('SIGTERM', hardStopMs);
    await Promise.all([accessLines.drain(), errorLog.drain()]);
  });
}
