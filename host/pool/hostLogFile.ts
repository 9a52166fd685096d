// host.log's one writer, in the pool's primary (see hostLog.ts for why one process writes it): workers'
// events arrive through write(), the primary's own through the levelled methods.
import type { LogSettings } from '../../common/settings.ts';
import { openLineLog, rotationOf } from '../../common/lineLog.ts';
import { hostJson, hostLine, levelEnabled, type HostEntry } from '../../common/logFormat.ts';
import type { TerminalEntry } from '../../common/terminal.ts';
import { levelled, type HostLog } from '../wire/hostLog.ts';

export interface PrimaryHostLog extends HostLog {
  /** An event from a worker. */
  write(entry: HostEntry): void;
  /** Opens host.log again by name (SIGHUP) with these settings; false if it could not be opened. */
  reopen(settings: LogSettings): boolean;
}

/** The primary's log: the one writer of host.log; with `terminal` (`extqs dev`) each event also goes there. */
export function openHostLog(dir: string, settings: LogSettings, terminal?: (entry: TerminalEntry) => void): PrimaryHostLog {
  const log = openLineLog(dir, 'host.log', rotationOf(settings));
  let threshold = settings.logLevel;
  let json = settings.logFormat === 'json';
  const write = (entry: HostEntry) => {
    if (!levelEnabled(entry.level, threshold)) return;
    log.write(json ? hostJson(entry, process.pid) : hostLine(entry));
    terminal?.({ ...entry, source: 'host' });
  };
  return {
    ...levelled((level, message, requestId) => write({ time: new Date(), level, requestId, message })),
    write,
    reopen(next) {
      threshold = next.logLevel;
      json = next.logFormat === 'json';
      return log.reopen(rotationOf(next));
    },
    drain: () => log.drain(),
  };
}
