// How a running process takes SIGHUP (Apache's graceful "reopen the logs, read the config again"): its
// log files are opened again by name, so an external logrotate in `create` mode works, and the settings
// read again go through the reload resolver (reloadResolver.ts), which decides what is applied and what
// needs a restart, and says so in the reload line. A process started by the launcher gets its settings
// from the launcher, which reads them again itself and sends each child the result. Never SIGUSR1: Node
// starts its debugger on it.
import type { Command } from './commands.ts';
import { readConfig, type ConfigOf } from './config.ts';
import type { IpcChannel } from './ipc.ts';
import type { ChildSays, LauncherSays } from './launcherProtocol.ts';
import { FROM_LAUNCHER_NOTE, readerOf, reloadedConfig, reloadNote, resolveReload, unreadNote } from './reloadResolver.ts';

/** Applies a reload: `config` holds the live settings to use now; `kept` when the old ones were kept on an error. */
export type ApplyReload<C> = (config: C, note: string, kept: boolean) => void;
/** Where a process's reloads come from: it registers what to do with each. */
export type Reloads<C> = (apply: ApplyReload<C>) => void;

/** Reads the configuration again; the running one with what the resolver applies, or the running one and why. */
export function rereadConfig<C extends Command>(
  command: C,
  argv: readonly string[],
  running: ConfigOf<C>,
): { config: ConfigOf<C>; note: string; kept: boolean } {
  try {
    const fresh = readConfig(command, argv);
    const reader = readerOf(command, running);
    return { config: reloadedConfig(reader, running, fresh), note: reloadNote(resolveReload(reader, running, fresh)), kept: false };
  } catch (err) {
    return { config: running, note: unreadNote(err as Error), kept: true };
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
    process.on('SIGHUP', () => apply(config, FROM_LAUNCHER_NOTE, false));
  };
}
