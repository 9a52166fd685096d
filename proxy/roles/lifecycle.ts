// The proxy's lines about itself (started, reloaded, stopping) and its ready line: written once per
// proxy, by its process, or with --proxy-workers by the primary for all its workers.
import { describeSettings, sliceFor } from '../../common/config.ts';
import type { ErrorEntry } from '../../common/logFormat.ts';
import { readyLine } from '../../common/ready.ts';
import { sighupLine } from '../../common/reloadResolver.ts';
import { notifyReady } from '../../common/serviceManager.ts';
import type { ProxyConfig } from '../../common/settings.ts';
import type { ErrorLog } from '../observe/errorLog.ts';

/** Where a listener is, as a URL. */
export function listenerUrl(scheme: 'http' | 'https', address: string, port: number): string {
  return `${scheme}://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/** Says the proxy serves at `urls` (plain, then TLS), in error.log and as the ready line on stdout. */
export function announceStart(errorLog: ErrorLog, config: ProxyConfig, urls: string[], metricsUrl?: string): void {
  errorLog.write({
    module: 'mpm_event',
    level: 'notice',
    message: `extqs proxy ${process.pid} configured -- resuming normal operations (${urls.join(', ')})`,
  });
  if (metricsUrl)
    errorLog.write({ module: 'mpm_event', level: 'notice', message: `serving /metrics alone on ${metricsUrl}/metrics to any client` });
  errorLog.write(settingsEntry(config));
  process.stdout.write(`${readyLine(...urls)}\n`);
  notifyReady((message) => errorLog.write({ module: 'core', level: 'error', message }));
}

/**
 * A SIGHUP's lines: which files were opened again and what the reload resolver decided, then the settings
 * the proxy runs with from now on (at info, as at start).
 */
export function reloadedEntries(reopened: readonly (string | false)[], note: string, kept: boolean, config: ProxyConfig): ErrorEntry[] {
  return [{ module: 'mpm_event', level: kept ? 'error' : 'notice', message: sighupLine(reopened, note) }, settingsEntry(config)];
}

/** Every setting of the proxy, those not given too (`--tls-cert none`; a configuration sent over IPC drops them). */
function settingsEntry(config: ProxyConfig): ErrorEntry {
  return { module: 'mpm_event', level: 'info', message: `settings: ${describeSettings(sliceFor('proxy', config))}` };
}

export function stoppingEntry(reason: string): ErrorEntry {
  return { module: 'mpm_event', level: 'notice', message: `caught ${reason}, shutting down` };
}
