// logs/error.log, in Apache 2.4's default layout (DESIGN.md §4).
import { openLineLog } from '../common/lineLog.ts';
import { errorLine, nowMicros, type ErrorEntry } from '../common/logFormat.ts';

export interface ErrorLog {
  write(event: ErrorEntry): void;
  drain(): Promise<void>;
}

export function openErrorLog(dir: string): ErrorLog {
  const log = openLineLog(dir, 'error.log');
  return {
    write: (event) => log.write(errorLine(event, nowMicros(), process.pid)),
    drain: () => log.drain(),
  };
}

/** `ip:port` of the client, as Apache's `[client %a]` shows it (IPv4-mapped addresses unwrapped). */
export function clientOf(socket: { remoteAddress?: string; remotePort?: number }): string {
  return `${clientAddress(socket.remoteAddress)}:${socket.remotePort ?? 0}`;
}

export function clientAddress(address: string | undefined): string {
  if (!address) return '-';
  return address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
}
