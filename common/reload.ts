// How a running process takes SIGHUP (Apache's graceful "reopen the logs, read the config again"): its
// log files are opened again by name, so an external logrotate in `create` mode works, and the live
// settings (the log settings, the TLS certificate, --compression) read again are applied; every other
// setting needs a restart, and the reload line says which. A process started by the launcher gets its
// settings from the launcher, which reads them again itself and sends each child the result. Never
// SIGUSR1: Node starts its debugger on it.
import { configChanges, liveSettingsOf, readConfig, type Command, type ConfigOf } from './config.ts';
import type { IpcChannel } from './ipc.ts';
import type { ChildSays, LauncherSays } from './launcherProtocol.ts';

/** Applies a reload: `config` holds the live settings to use now; `kept` when the old ones were kept on an error. */
export type ApplyReload<C> = (config: C, note: string, kept: boolean) => void;
/** Where a process's reloads come from: it registers what to do with each. */
export type Reloads<C> = (apply: ApplyReload<C>) => void;

/** One line for the logs: what was reloaded and what needs a restart. */
export function describeReload<C extends object>(running: C, fresh: C): string {
  const { live, restart } = configChanges(running, fresh);
  const applied = live.length > 0 ? `applied ${live.join(', ')}` : 'live settings unchanged';
  const later = restart.length > 0 ? `; need a restart to apply: ${restart.join(', ')}` : '';
  return `${applied}${later}`;
}

/** Reads the configuration again; the running one with the live settings read, or the running one and why. */
export function rereadConfig<C extends Command>(
  command: C,
  argv: readonly string[],
  running: ConfigOf<C>,
): { config: ConfigOf<C>; note: string; kept: boolean } {
  try {
    const fresh = readConfig(command, argv);
    const config = Object.freeze({ ...running, ...liveSettingsOf(fresh) }) as ConfigOf<C>;
    return { config, note: describeReload(running, fresh), kept: false };
  } catch (err) {
    return { config: running, note: `configuration not read again, the running one is kept: ${(err as Error).message}`, kept: true };
  }
}

/** A process started from its own command line: SIGHUP reads that command line (and environment, file) again. */
export function reloadOnSighup<C extends Command>(command: C, argv: readonly string[], running: ConfigOf<C>): Reloads<ConfigOf<C>> {
  return (apply) => {
    let config = running;
    process.on('SIGHUP', () => {
      const reread = rereadConfig(command, argv, config);
      config = reread.config;
      apply(config, reread.note, reread.kept);
    });
  };
}

/** A process started by the launcher: its reload notices; a SIGHUP sent to it directly only reopens the logs. */
export function reloadFromLauncher<C>(channel: IpcChannel<ChildSays, LauncherSays>, running: C): Reloads<C> {
  return (apply) => {
    let config = running;
    channel.on('reload', ({ config: fresh, note, kept }) => {
      config = fresh as C;
      apply(config, note, kept);
    });
    process.on('SIGHUP', () =>
      apply(config, 'settings unchanged: they come from the launcher, which reads them again on its SIGHUP', false),
    );
  };
}
