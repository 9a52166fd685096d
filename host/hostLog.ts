// logs/host.log: the application's own log, one event a line (DESIGN.md §4), PHP-error-log-like or JSON
// (--log-format json); events below --log-level are not written.
//
// One process writes the file: the pool's primary. Workers send their events to it over the cluster
// channel, a turn's events in one message, because several processes appending to one file cannot
// rotate it by size (each would count only its own bytes and rename the file under the others) and
// would each have to reopen it on SIGHUP.
import type { LogSettings } from '../common/config.ts';
import { openLineLog, rotationOf } from '../common/lineLog.ts';
import { hostJson, hostLine, levelEnabled, type HostEntry } from '../common/logFormat.ts';
import type { ToPrimary, ToWorker, WireHostEntry } from './poolMessages.ts';

export interface HostLog {
  error(message: string, requestId?: string): void;
  warn(message: string, requestId?: string): void;
  notice(message: string, requestId?: string): void;
  info(message: string, requestId?: string): void;
  /** Resolves when every event logged so far is in the file (a worker: in the primary's hands). */
  drain(): Promise<void>;
}

export interface PrimaryHostLog extends HostLog {
  /** An event from a worker. */
  write(entry: HostEntry): void;
  /** Opens host.log again by name (SIGHUP) with these settings; false if it could not be opened. */
  reopen(settings: LogSettings): boolean;
}

function levelled(write: (level: HostEntry['level'], message: string, requestId?: string) => void): Omit<HostLog, 'drain'> {
  return {
    error: (message, requestId) => write('error', message, requestId),
    warn: (message, requestId) => write('warn', message, requestId),
    notice: (message, requestId) => write('notice', message, requestId),
    info: (message, requestId) => write('info', message, requestId),
  };
}

/** The primary's log: the one writer of host.log. */
export function openHostLog(dir: string, settings: LogSettings): PrimaryHostLog {
  const log = openLineLog(dir, 'host.log', rotationOf(settings));
  let threshold = settings.logLevel;
  let json = settings.logFormat === 'json';
  const write = (entry: HostEntry) => {
    if (!levelEnabled(entry.level, threshold)) return;
    log.write(json ? hostJson(entry, process.pid) : hostLine(entry));
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

/** How long a worker's drain() waits for the primary to confirm it has its events. */
const FLUSH_TIMEOUT_MS = 5_000;

/** A worker's log: events go to the primary over the cluster channel. */
export function workerHostLog(): HostLog {
  let pending: WireHostEntry[] = [];
  let nextFlushId = 0;
  const flushed = new Map<number, () => void>();
  process.on('message', (message: ToWorker) => {
    if (message?.type === 'log-flushed') flushed.get(message.id)?.();
  });

  function send(flush?: number): boolean {
    const entries = pending;
    pending = [];
    if (!process.connected) {
      // The primary is gone: stderr (the launcher's) rather than nowhere.
      for (const entry of entries) process.stderr.write(`host.log: ${hostLine({ ...entry, time: new Date(entry.time) })}\n`);
      return false;
    }
    process.send!({ type: 'log', entries, flush } satisfies ToPrimary);
    return true;
  }

  return {
    ...levelled((level, message, requestId) => {
      if (pending.length === 0) setImmediate(() => pending.length > 0 && send());
      pending.push({ time: Date.now(), level, requestId, message, pid: process.pid });
    }),
    drain() {
      const id = nextFlushId++;
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, FLUSH_TIMEOUT_MS);
        function done() {
          clearTimeout(timer);
          flushed.delete(id);
          resolve();
        }
        flushed.set(id, done);
        if (!send(id)) done();
      });
    },
  };
}
