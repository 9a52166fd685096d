// logs/host.log: the application's own log, one event a line (docs/design.md §4), PHP-error-log-like or JSON
// (--log-format json); events below --log-level are not written.
//
// One process writes the file: the pool's primary. Workers send their events to it over the cluster
// channel, a turn's events in one message, because several processes appending to one file cannot
// rotate it by size (each would count only its own bytes and rename the file under the others) and
// would each have to reopen it on SIGHUP. A worker's watchdog thread, which runs while the worker's
// thread (and so its IPC) is blocked, sends its one line through a pipe to the primary instead.
// The primary's writer is host/hostLogFile.ts; this file is what a worker needs (no winston there).
import { hostLine, type HostEntry } from '../common/logFormat.ts';
import type { IpcChannel } from '../common/ipc.ts';
import type { PoolSays, WireHostEntry, WorkerSays } from './poolMessages.ts';

export interface HostLog {
  error(message: string, requestId?: string): void;
  warn(message: string, requestId?: string): void;
  notice(message: string, requestId?: string): void;
  info(message: string, requestId?: string): void;
  debug(message: string, requestId?: string): void;
  /** Resolves when every event logged so far is in the file (a worker: in the primary's hands). */
  drain(): Promise<void>;
}

export function levelled(write: (level: HostEntry['level'], message: string, requestId?: string) => void): Omit<HostLog, 'drain'> {
  return {
    error: (message, requestId) => write('error', message, requestId),
    warn: (message, requestId) => write('warn', message, requestId),
    notice: (message, requestId) => write('notice', message, requestId),
    info: (message, requestId) => write('info', message, requestId),
    debug: (message, requestId) => write('debug', message, requestId),
  };
}

/** How long a worker's drain() waits for the primary to confirm it has its events. */
const FLUSH_TIMEOUT_MS = 5_000;

/** A worker's log: events go to the primary over the cluster channel, a turn's events in one notice. */
export function workerHostLog(channel: IpcChannel<WorkerSays, PoolSays>): HostLog {
  let pending: WireHostEntry[] = [];

  /** The events not sent yet; written to stderr (the launcher's) when the primary is gone. */
  function take(): WireHostEntry[] {
    const entries = pending;
    pending = [];
    if (process.connected) return entries;
    for (const entry of entries) process.stderr.write(`host.log: ${hostLine({ ...entry, time: new Date(entry.time) })}\n`);
    return [];
  }

  return {
    ...levelled((level, message, requestId) => {
      if (pending.length === 0) setImmediate(() => pending.length > 0 && channel.notify('log', { entries: take() }));
      pending.push({ time: Date.now(), level, requestId, message, pid: process.pid });
    }),
    async drain() {
      if (!process.connected) {
        take();
        return;
      }
      // Past the timeout the worker exits anyway: what the primary did not confirm may be lost.
      await channel.request('flush', { entries: take() }, FLUSH_TIMEOUT_MS).catch(() => {});
    },
  };
}
