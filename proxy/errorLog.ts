// logs/error.log, in Apache 2.4's default layout (docs/design.md §4) or JSON (--log-format json); lines below
// --log-level are not written.
import type { IncomingMessage } from 'node:http';
import type { LogSettings } from '../common/settings.ts';
import { openLineLog, rotationOf, type LineLog } from '../common/lineLog.ts';
import { errorJson, errorLine, levelEnabled, nowMicros, type ErrorEntry } from '../common/logFormat.ts';
import type { TerminalEntry } from '../common/terminal.ts';

export interface ErrorLog {
  write(event: ErrorEntry): void;
  /** Opens the file again by name (SIGHUP) with these settings; false if it could not be opened. */
  reopen(settings: LogSettings): boolean;
  drain(): Promise<void>;
}

/**
 * `log` is the file itself, or a worker's relay to the primary that writes it (logRelay.ts). With
 * `terminal` (`extqs dev`) each event also goes there, from the process where it happened.
 */
export function openErrorLog(
  dir: string,
  settings: LogSettings,
  log: LineLog = openLineLog(dir, 'error.log', rotationOf(settings)),
  terminal?: (entry: TerminalEntry) => void,
): ErrorLog {
  let threshold = settings.logLevel;
  let format = settings.logFormat === 'json' ? errorJson : errorLine;
  return {
    write(event) {
      if (!levelEnabled(event.level, threshold)) return;
      log.write(format(event, nowMicros(), process.pid));
      terminal?.({ ...event, time: new Date(), source: event.module });
    },
    reopen(next) {
      threshold = next.logLevel;
      format = next.logFormat === 'json' ? errorJson : errorLine;
      return log.reopen(rotationOf(next));
    },
    drain: () => log.drain(),
  };
}

/** What a client line needs of a socket; `{}` when the socket is gone already. */
export type ClientSocket = { remoteAddress?: string; remotePort?: number };

/** `ip:port` of the client, as Apache's `[client %a]` shows it (IPv4-mapped addresses unwrapped). */
export function clientOf(socket: ClientSocket): string {
  return `${clientAddress(socket.remoteAddress)}:${socket.remotePort ?? 0}`;
}

/** Each request's `ip:port`, taken when it arrived (rememberClient). */
const clients = new WeakMap<IncomingMessage, string>();

/**
 * Keeps the client of a request for its log lines: once an HTTP/2 stream has closed its socket reads as
 * none (node:http2's proxy socket), and undici nulls `req.socket` when it drops a request body.
 */
export function rememberClient(req: IncomingMessage): void {
  clients.set(req, clientOf(req.socket));
}

/** `ip:port` of the client that sent `req`, as it arrived. */
export function clientOfRequest(req: IncomingMessage): string {
  return clients.get(req) ?? clientOf(req.socket ?? {});
}

export function clientAddress(address: string | undefined): string {
  if (!address) return '-';
  return address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
}
