// `extqs proxy` (and the launcher's proxy child): the primary of --proxy-workers N > 1, or one process
// that serves. Each loads only its own code: a primary never serves, so it never loads the server,
// send, chokidar or a forwarding engine (9-10 MB of its memory); a serving proxy never loads node:cluster.
import { ConfigError } from '../../common/configError.ts';
import type { Reloads } from '../../common/reload.ts';
import { labelOf, type ProxyConfig } from '../../common/settings.ts';

export async function runProxy(config: ProxyConfig, reloads: Reloads<ProxyConfig>): Promise<void> {
  if (config.upstreams.length === 0) {
    throw new ConfigError(labelOf('upstreams'), '', 'unix:/path/to/socket or http://<host>:<port>, once per host');
  }
  if (config.proxyWorkers > 1) {
    const { runProxyPrimary } = await import('./primary.ts');
    return runProxyPrimary(config, reloads);
  }
  const { serveProxy } = await import('./serveProxy.ts');
  await serveProxy(config, reloads);
}
