// How a running process takes SIGHUP (Apache's graceful "reopen the logs, read the config again"):
// its log files are opened again by name, so an external logrotate in `create` mode works, and the log
// settings are applied live; every other setting needs a restart, and the reload line says which.
// The launcher reads the configuration again itself and passes the result to its children as an IPC
// message, so all processes apply the same settings; a SIGHUP sent to a child directly makes it read its
// own flags again. Never SIGUSR1: Node starts its debugger on it.
import { configChanges, logSettingsOf, readConfig, type Config, type LogSettings } from './config.ts';

export interface ReloadMessage {
  type: 'extqs:reload';
  settings: LogSettings;
  /** What the launcher found: applied settings, settings that need a restart, or why it kept the old ones. */
  note: string;
  /** The configuration could not be read again and the running one is kept: an error, not a notice. */
  kept: boolean;
}

export type Reload = (settings: LogSettings, note: string, kept: boolean) => void;

/** One line for the logs: what was reloaded and what needs a restart. */
export function describeReload(running: Config, fresh: Config): string {
  const { live, restart } = configChanges(running, fresh);
  const applied = live.length > 0 ? `applied ${live.join(', ')}` : 'log settings unchanged';
  const later = restart.length > 0 ? `; need a restart to apply: ${restart.join(', ')}` : '';
  return `${applied}${later}`;
}

/** Reads the configuration again; on a bad value keeps the running one and says why. */
export function rereadConfig(argv: string[], running: Config): { config: Config; note: string; kept: boolean } {
  try {
    const fresh = readConfig(argv);
    return { config: fresh, note: describeReload(running, fresh), kept: false };
  } catch (err) {
    return { config: running, note: `configuration not read again, the running one is kept: ${(err as Error).message}`, kept: true };
  }
}

/**
 * Calls `reload` on SIGHUP (settings from this process's own flags read again) and on the launcher's
 * reload message (its settings).
 */
export function onReload(argv: string[], running: Config, reload: Reload): void {
  let config = running;
  process.on('SIGHUP', () => {
    const reread = rereadConfig(argv, config);
    config = reread.config;
    reload(logSettingsOf(config), reread.note, reread.kept);
  });
  process.on('message', (message: Partial<ReloadMessage> | null) => {
    if (message?.type === 'extqs:reload' && message.settings) reload(message.settings, message.note ?? '', message.kept ?? false);
  });
}
