// A proxy process that serves the public port, alone or as one worker of the primary's (primary.ts): it
// serves www/public, forwards /External to the host, and writes logs/access.log and logs/error.log. Not an
// entry point: run.ts (`extqs proxy`, the launcher's child) or workerMain.ts (a forked worker) starts it with a
// validated configuration. As a worker, its log lines and its share of /metrics and /server-status go through
// the primary.
import type { Server } from 'node:http';
import type { Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { LinkGuard } from '../../common/linkGuard.ts';
import { logSettingsOf } from '../../common/config.ts';
import type { IpcChannel } from '../../common/ipc.ts';
import { logRelay } from '../../common/logRelay.ts';
import type { Reloads } from '../../common/reload.ts';
import type { Forwarder, ProxyConfig } from '../../common/settings.ts';
import { onShutdownSignal } from '../../common/shutdown.ts';
import { accessFile, openAccessLog, relayedAccess } from '../observe/accessLog.ts';
import type { CompressionSettings } from '../core/compression.ts';
import { errorFile, openErrorLog, relayedErrors } from '../observe/errorLog.ts';
import { ErrorPages } from '../core/errorPages.ts';
import { terminalWriter } from '../../common/terminal.ts';
import { announceStart, listenerUrl, reloadedEntries, stoppingEntry } from './lifecycle.ts';
import { metricsPortServer } from '../observe/metricsPort.ts';
import { createProxyServer, type RequestPathOptions } from '../server/server.ts';
import { REQUEST_PATH_SETTINGS } from '../../common/reloadResolver.ts';
import { serverBanner } from '../server/serverBanner.ts';
import { allowList } from '../../common/clientList.ts';
import { StaticCache } from '../static/staticCache.ts';
import { tlsOptionsOf } from '../server/tls.ts';
import { Upstreams } from '../forward/upstreams.ts';
import { readClientTls } from '../../common/hostTarget.ts';
import type { ProxyLogEntries, ProxyPrimarySays, ProxyWorkerSays } from '../observe/workerMessages.ts';

/** A worker's /server-status or /metrics waits this long for every worker's share. */
const SHARES_TIMEOUT_MS = 2_000;

/** Only the chosen engine is loaded: http-proxy takes 4 MB of resident memory that the builtin engine does not. */
async function loadForwarder(forwarder: Forwarder) {
  return forwarder === 'builtin'
    ? (await import('../forward/forwardBuiltin.ts')).createBuiltinForwarder
    : (await import('../forward/forwardHttpProxy.ts')).createHttpProxyForwarder;
}

/** Listens on `port` at `address`; resolves with the address bound (port 0 picks one). */
async function listen(server: Server | Http2SecureServer, port: number, address: string): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server.address() as AddressInfo;
}

/**
 * Serves the port: the whole proxy, or with `primary` one worker of several, which leaves the start,
 * reload and stop lines and the ready line to the primary.
 */
export async function serveProxy(
  config: ProxyConfig,
  reloads: Reloads<ProxyConfig>,
  primary?: IpcChannel<ProxyWorkerSays, ProxyPrimarySays>,
): Promise<void> {
  const logSettings = logSettingsOf(config);
  const relay =
    primary &&
    logRelay<ProxyLogEntries>(
      (batch) => primary.notify('log', batch),
      (batch, timeoutMs) => primary.request('flush', batch, timeoutMs),
    );
  const accessLog = openAccessLog(relay ? relayedAccess(relay, logSettings) : accessFile(config.logs, logSettings));
  const errorLog = openErrorLog(
    logSettings,
    relay ? relayedErrors(relay, logSettings) : errorFile(config.logs, logSettings),
    config.dev ? terminalWriter() : undefined,
  );
  // Registered first, so a SIGHUP during start-up reopens the logs rather than ending the process.
  let reloadCertificate = (_settings: ProxyConfig): void => {};
  // The settings the request path is (to be) built with; a SIGHUP before the server exists is applied once it does.
  let pathSettings = config;
  let reloadRequestPath = (_settings: ProxyConfig): void => {};
  // Read by every request, so a SIGHUP's --compression and --error-document apply to the next answers.
  const compression: CompressionSettings = { codings: config.compression };
  const errorPages = new ErrorPages(config.errorDocuments);
  reloads((settings, note, kept) => {
    errorPages.replace(settings.errorDocuments);
    const reopened = [accessLog.reopen(settings) && 'access.log', errorLog.reopen(settings) && 'error.log'];
    compression.codings = settings.compression;
    if (!primary) for (const entry of reloadedEntries(reopened, note, kept, settings)) errorLog.write(entry);
    if (kept) return;
    reloadCertificate(settings);
    // A primary's workers are replaced with these instead (primary.ts); a lone process takes them itself, only when
    // one changed: a SIGHUP for logrotate keeps the hosts' connections and what the upstreams' health has learned.
    if (primary || REQUEST_PATH_SETTINGS.every((key) => isDeepStrictEqual(pathSettings[key], settings[key]))) return;
    pathSettings = settings;
    reloadRequestPath(settings);
  });
  // Read once: an https:// upstream a SIGHUP adds needs a restart when the files change (common/reloadResolver.ts).
  const clientTls = readClientTls(config);
  const upstreamsOf = (settings: ProxyConfig) =>
    new Upstreams(
      settings.upstreams,
      { maxFails: settings.upstreamMaxFails, failTimeoutMs: settings.upstreamFailTimeout * 1000, clientTls },
      (message) => errorLog.write({ module: 'proxy', level: 'warn', message }),
    );
  const publicDir = join(config.www, 'public');
  const staticCache = new StaticCache(publicDir, { links: new LinkGuard(publicDir, config.followSymlinks) });
  /** What a lone process's SIGHUP builds a new request path from (server.ts reload()). */
  const requestPathOf = async (settings: ProxyConfig): Promise<RequestPathOptions> => ({
    upstreams: upstreamsOf(settings),
    statusAllow: allowList(settings.statusAllow),
    upstreamTimeoutMs: settings.upstreamTimeout * 1000,
    createForwarder: await loadForwarder(settings.forwarder),
    limits: settings,
    serverBanner: serverBanner(settings.serverTokens),
  });
  const { server, tlsServer, stop, metrics, scrape, reloadTls, reload } = createProxyServer({
    ...(await requestPathOf(config)),
    www: config.www,
    staticCache,
    accessLog,
    errorLog,
    everyShare: primary && (() => primary.request('all-metrics', null, SHARES_TIMEOUT_MS)),
    tls: config.tlsCert === undefined ? undefined : tlsOptionsOf(config),
    compression,
    errorPages,
    markLocalClients: config.dev === true,
  });
  // Applied in the order the SIGHUPs came, each once its engine is loaded.
  let reloading = Promise.resolve();
  reloadRequestPath = (settings) => {
    reloading = reloading
      .then(async () => reload(await requestPathOf(settings)))
      .catch((err: Error) =>
        errorLog.write({
          module: 'core',
          level: 'error',
          message: `the new settings were not applied, the old ones serve on: ${err.message}`,
        }),
      );
  };
  if (pathSettings !== config) reloadRequestPath(pathSettings);
  primary?.answer('metrics', metrics);
  /**
   * The certificate and key read again (certbot renews them in place), for new handshakes. Whether there
   * is an HTTPS listener stays as it started (common/reloadResolver.ts).
   */
  reloadCertificate = (settings) => {
    if (!tlsServer || settings.tlsCert === undefined) return;
    try {
      reloadTls(tlsOptionsOf(settings));
    } catch (err) {
      errorLog.write({
        module: 'ssl',
        level: 'error',
        message: `the certificate was not read again, the old one is kept: ${(err as Error).message}`,
      });
    }
  };

  await staticCache.watch((err) =>
    errorLog.write({
      module: 'core',
      level: 'error',
      message: `Watching ${config.www}/public failed; files are served from disk from now on: ${String(err)}`,
    }),
  );
  const { address, port } = await listen(server, config.port, config.listen);
  const urls = [listenerUrl('http', address, port)];
  if (tlsServer) {
    const tlsAddress = await listen(tlsServer, config.tlsPort, config.listen);
    urls.push(listenerUrl('https', tlsAddress.address, tlsAddress.port));
  }
  // Last, so a primary knows it by its order among a worker's listeners (primary.ts).
  const metricsServer =
    config.metricsPort === undefined
      ? undefined
      : metricsPortServer(scrape, (message) => errorLog.write({ module: 'proxy', level: 'error', message }));
  const metricsAddress = metricsServer && (await listen(metricsServer, config.metricsPort!, config.listen));
  const stopServing = async (graceMs: number, retire = false) => {
    // A scrape is quick and its client retries: no grace for it.
    metricsServer?.close();
    metricsServer?.closeAllConnections();
    await stop(graceMs, retire);
    await staticCache.close();
    await Promise.all([accessLog.drain(), errorLog.drain()]);
  };
  if (primary) {
    // The primary says it started and is stopping; a worker stops when told, or when the primary is gone,
    // and retires when new workers took its place. Stopped while retiring, it cuts its idle connections.
    const graceMs = config.shutdownTimeout * 1000;
    let retiring: Promise<void> | undefined;
    primary.on('retire', () => {
      // Its counts go on in the primary's share, so no counter of /metrics goes down when it is gone.
      const handOver = async () => primary.request('last-metrics', await metrics(), SHARES_TIMEOUT_MS).catch(() => null);
      retiring ??= stopServing(graceMs, true)
        .then(handOver)
        .then(
          () => process.exit(0),
          (err: Error) => {
            process.stderr.write(`extqs proxy worker ${process.pid}: retiring failed: ${err.stack ?? String(err)}\n`);
            process.exit(1);
          },
        );
    });
    onShutdownSignal(() => (retiring ? stop(graceMs).then(() => retiring) : stopServing(graceMs)));
    return;
  }
  announceStart(errorLog, config, urls, metricsAddress && listenerUrl('http', metricsAddress.address, metricsAddress.port));
  onShutdownSignal(async (reason) => {
    errorLog.write(stoppingEntry(reason));
    await stopServing(config.shutdownTimeout * 1000);
  });
}
