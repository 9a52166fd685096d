// logs/host.log: the application's own log, one event a line (docs/design.md §10), PHP-error-log-like or JSON
// (--log-format json); events below --log-level are not written.
//
// One process writes the file: the pool's primary. Workers send their events to it over the cluster
// channel through common/logRelay.ts (why one writer: see there). A worker's watchdog thread, which runs
// while the worker's thread (and so its IPC) is blocked, sends its one line through a pipe to the primary instead.
// The primary's writer is host/pool/hostLogFile.ts; this file is what a worker needs (no winston there).
import { hostLine, type HostEntry } from '../../common/logFormat.ts';
import type { IpcChannel } from '../../common/ipc.ts';
import { logRelay } from '../../common/logRelay.ts';
import type { HostLogEntries, PoolSays, WorkerSays } from './poolMessages.ts';

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

/** A worker's log: events go to the primary (common/logRelay.ts), a turn's events in one notice. */
export function workerHostLog(channel: IpcChannel<WorkerSays, PoolSays>): HostLog {
  const relay = logRelay<HostLogEntries>(
    (batch) => channel.notify('log', batch),
    (batch, timeoutMs) => channel.request('flush', batch, timeoutMs),
  );
  const send = relay.to('host.log', (entry) => `host.log: ${hostLine({ ...entry, time: new Date(entry.time) })}`);
  return {
    ...levelled((level, message, requestId) => send({ time: Date.now(), level, requestId, message, pid: process.pid })),
    drain: () => relay.drain(),
  };
}
