// Line layouts shared by the proxy and the host: Apache's combined access log, Apache 2.4's
// error log, and a PHP-error-log-like host log. Pure functions: the writers live elsewhere.

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** Wall-clock time in microseconds, for Apache's %{u}t. */
export function nowMicros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

/**
 * Caches one formatted value per wall-clock second: every log line needs the time, and formatting a
 * Date field by field for each request was a visible cost on the hot paths.
 */
function perSecond<T>(format: (date: Date) => T): (seconds: number) => T {
  let cachedSecond = -1;
  let cached!: T;
  return (seconds) => {
    if (seconds !== cachedSecond) {
      cachedSecond = seconds;
      cached = format(new Date(seconds * 1000));
    }
    return cached;
  };
}

/** The error-log time around the microseconds: `Sun Nov 22 01:42:10` and ` 2026`. */
const errorLogSecond = perSecond((date) => ({
  head: `${DAYS[date.getDay()]} ${MONTHS[date.getMonth()]} ${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`,
  tail: ` ${date.getFullYear()}`,
}));

/** Apache 2.4 error-log time: `Sun Nov 22 01:42:10.919811 2026` (local time, microseconds). */
export function errorLogTime(micros: number): string {
  const { head, tail } = errorLogSecond(Math.floor(micros / 1_000_000));
  return `${head}.${pad(micros % 1_000_000, 6)}${tail}`;
}

function utcOffset(date: Date): string {
  const minutes = -date.getTimezoneOffset();
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${pad(Math.floor(abs / 60))}${pad(abs % 60)}`;
}

const accessLogSecond = perSecond(
  (date) =>
    `${pad(date.getDate())}/${MONTHS[date.getMonth()]}/${date.getFullYear()}:` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())} ${utcOffset(date)}`,
);

/** Common Log Format time: `22/Nov/2026:02:01:41 +0000` (local time with offset). */
export function accessLogTime(date: Date): string {
  return accessLogSecond(Math.floor(date.getTime() / 1000));
}

/** The C escapes ap_escape_logitem() writes for these control characters. */
const NAMED_ESCAPES: Record<number, string> = { 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0b: '\\v', 0x0d: '\\r' };

/**
 * Escapes a client-supplied value as Apache's ap_escape_logitem() does: `\b \t \n \v \r` as C escapes,
 * `"` (unless `quotes` is false, as in the error log) and `\` with a backslash, other control and non-ASCII
 * bytes as \xhh, so a line can never be split or forged.
 */
export function escapeLogValue(value: string, quotes = true): string {
  // Fast path: printable ASCII without quote or backslash needs nothing.
  if (/^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(value)) return value;
  // Values read from the wire are latin1 strings, one char a byte; text made here may hold more.
  const bytes = Buffer.from(value, /[^\x00-\xff]/.test(value) ? 'utf8' : 'latin1');
  let out = '';
  for (const byte of bytes) {
    if (byte === 0x22) out += quotes ? '\\"' : '"';
    else if (byte === 0x5c) out += '\\\\';
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += NAMED_ESCAPES[byte] ?? `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  return out;
}

export interface AccessEntry {
  remoteAddress: string;
  time: Date;
  method: string;
  url: string;
  httpVersion: string;
  status: number;
  bytes: number;
  referer: string | undefined;
  userAgent: string | undefined;
}

/** `%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"`: Apache's combined format. */
export function combinedLine(entry: AccessEntry): string {
  const request = escapeLogValue(`${entry.method} ${entry.url} HTTP/${entry.httpVersion}`);
  const bytes = entry.bytes > 0 ? String(entry.bytes) : '-';
  const referer = entry.referer ? escapeLogValue(entry.referer) : '-';
  const userAgent = entry.userAgent ? escapeLogValue(entry.userAgent) : '-';
  return `${entry.remoteAddress} - - [${accessLogTime(entry.time)}] "${request}" ${entry.status} ${bytes} "${referer}" "${userAgent}"`;
}

export interface ErrorEntry {
  module: string;
  level: 'emerg' | 'alert' | 'crit' | 'error' | 'warn' | 'notice' | 'info' | 'debug';
  /** Apache's %E: the OS or library status before the client, e.g. `(OS 2)The system cannot find the file specified.` */
  status?: string;
  client?: string;
  message: string;
  requestId?: string;
}

/**
 * Apache 2.4's default ErrorLogFormat:
 * `[%{u}t] [%-m:%l] [pid %P] %E: [client %a] %M, request_id: %L`.
 */
export function errorLine(entry: ErrorEntry, micros: number, pid: number): string {
  // One template, not a chain of +=: this runs for every missing file and failed forward.
  const status = entry.status ? `${entry.status}: ` : '';
  const client = entry.client ? `[client ${entry.client}] ` : '';
  const id = entry.requestId ? `, request_id: ${escapeLogValue(entry.requestId, false)}` : '';
  return `[${errorLogTime(micros)}] [${entry.module}:${entry.level}] [pid ${pid}] ${status}${client}${escapeLogValue(entry.message, false)}${id}`;
}

/** PHP error-log time: `22-Nov-2026 02:01:41 UTC`, here with milliseconds. */
export function hostLogTime(date: Date): string {
  return (
    `${pad(date.getUTCDate())}-${MONTHS[date.getUTCMonth()]}-${date.getUTCFullYear()} ` +
    `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}.${pad(date.getUTCMilliseconds(), 3)} UTC`
  );
}

export interface HostEntry {
  time: Date;
  level: 'error' | 'warn' | 'info';
  requestId?: string;
  message: string;
}

/**
 * One host event a line, PHP-error-log-like: `[22-Nov-2026 02:01:41.123 UTC] [error] [req <id>] message`.
 * Multi-line messages (stacks) keep their lines but indent the continuation so a line-based reader still
 * sees one event start per `[`.
 */
export function hostLine(entry: HostEntry): string {
  const id = entry.requestId ? escapeLogValue(entry.requestId) : '-';
  const message = entry.message.replace(/\r?\n/g, '\n    ');
  return `[${hostLogTime(entry.time)}] [${entry.level}] [req ${id}] ${message}`;
}
