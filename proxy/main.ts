// The proxy process (web-server role): the public port. Serves www/public, forwards /External to the
// host, and writes logs/access.log and logs/error.log. Started by `extqs proxy` or by the launcher,
// which both hand it a validated configuration.
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ConfigError } from '../common/configError.ts';
import { describeSettings, logSettingsOf } from '../common/config.ts';
import { readyLine } from '../common/ready.ts';
import type { Reloads } from '../common/reload.ts';
import { labelOf, type Forwarder, type ProxyConfig } from '../common/settings.ts';
import { onShutdownSignal } from '../common/shutdown.ts';
import { openAccessLog } from './accessLog.ts';
import { openErrorLog } from './errorLog.ts';
import { createProxyServer } from './server.ts';
import { allowList } from './serverStatus.ts';
import { StaticCache } from './staticCache.ts';
import { Upstreams } from './upstreams.ts';

/** Only the chosen engine is loaded: undici takes 18 MB of resident memory, http-proxy 4 MB. */
async function loadForwarder(forwarder: Forwarder) {
  return forwarder === 'undici'
    ? (await import('./forwardUndici.ts')).createUndiciForwarder
    : (await import('./forwardHttpProxy.ts')).createHttpProxyForwarder;
}

export async function runProxy(config: ProxyConfig, reloads: Reloads<ProxyConfig>): Promise<void> {
  if (config.upstreams.length === 0) {
    throw new ConfigError(labelOf('upstreams'), '', 'unix:/path/to/socket or http://<host>:<port>, once per host');
  }
  const accessLog = openAccessLog(config.logs, logSettingsOf(config));
  const errorLog = openErrorLog(config.logs, logSettingsOf(config));
  reloads((settings, note, kept) => {
    const reopened = [accessLog.reopen(settings) && 'access.log', errorLog.reopen(settings) && 'error.log'].filter(Boolean);
    errorLog.write({
      module: 'mpm_event',
      level: kept ? 'error' : 'notice',
      message: `SIGHUP received: reopened ${reopened.join(', ') || 'no log file'}; ${note}`,
    });
  });
  const upstreams = new Upstreams(
    config.upstreams,
    { maxFails: config.upstreamMaxFails, failTimeoutMs: config.upstreamFailTimeout * 1000 },
    (message) => errorLog.write({ module: 'proxy', level: 'warn', message }),
  );
  const staticCache = new StaticCache(join(config.www, 'public'));
  await staticCache.watch((err) =>
    errorLog.write({
      module: 'core',
      level: 'error',
      message: `Watching ${config.www}/public failed; files are served from disk from now on: ${String(err)}`,
    }),
  );
  const { server, stop } = createProxyServer({
    www: config.www,
    staticCache,
    upstreams,
    statusAllow: allowList(config.statusAllow),
    upstreamTimeoutMs: config.upstreamTimeout * 1000,
    createForwarder: await loadForwarder(config.forwarder),
    limits: config,
    accessLog,
    errorLog,
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.listen, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  errorLog.write({
    module: 'mpm_event',
    level: 'notice',
    message: `extqs proxy ${process.pid} configured -- resuming normal operations (http://${host}:${port})`,
  });
  errorLog.write({ module: 'mpm_event', level: 'info', message: `settings: ${describeSettings(config)}` });
  process.stdout.write(`${readyLine(`http://${host}:${port}`)}\n`);

  onShutdownSignal(async (reason) => {
    errorLog.write({ module: 'mpm_event', level: 'notice', message: `caught ${reason}, shutting down` });
    await stop(config.shutdownTimeout * 1000);
    await staticCache.close();
    await Promise.all([accessLog.drain(), errorLog.drain()]);
  });
}
