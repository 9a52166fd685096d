// Line layouts shared by the proxy and the host: Apache's combined access log, Apache 2.4's
// error log, and a PHP-error-log-like host log, each also as one JSON object a line (--log-format json)
// for shipping to a collector. Pure functions: the writers live elsewhere.

/** Apache's LogLevel names, most severe first: a line is written when its level is at or above the setting. */
export const LOG_LEVELS = [
  'emerg',
  'alert',
  'crit',
  'error',
  'warn',
  'notice',
  'info',
  'debug',
  'trace1',
  'trace2',
  'trace3',
  'trace4',
  'trace5',
  'trace6',
  'trace7',
  'trace8',
] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A level's severity as a number (emerg 0 … trace8 15), for a comparison per line instead of a search. */
export const LEVEL_RANK: Readonly<Record<LogLevel, number>> = Object.freeze(
  Object.fromEntries(LOG_LEVELS.map((level, i) => [level, i])) as Record<LogLevel, number>,
);

/**
 * Whether a line of `level` is written when the log is set to `threshold`. `notice` lines (start, stop,
 * SIGHUP) are always written, as Apache writes them to a file log whatever its LogLevel (log.c).
 */
export function levelEnabled(level: LogLevel, threshold: LogLevel): boolean {
  return level === 'notice' || LEVEL_RANK[level] <= LEVEL_RANK[threshold];
}

/**
 * `combined`: Apache's text layouts (each file its own); `json`: one JSON object a line. Any other value is an
 * Apache LogFormat string for access.log (compileAccessFormat), error.log and host.log keeping their text layouts.
 */
export const LOG_FORMATS = ['combined', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number] | (string & {});

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** The process's time origin: read once, as each read of `performance.timeOrigin` is a call into Node's C++. */
const TIME_ORIGIN = performance.timeOrigin;

/** Wall-clock time in microseconds, for Apache's %{u}t. */
export function nowMicros(): number {
  return Math.round((TIME_ORIGIN + performance.now()) * 1000);
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
  // eslint-disable-next-line no-control-regex -- the whole latin1 range, control bytes included, is one byte a char
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
  /** Only in the JSON layout and a LogFormat's %L: the combined format has no field for it. */
  requestId?: string;
  /** From arrival to the response's end, for a LogFormat string's %D and %T. */
  durationMicros?: number;
  /**
   * Apache's %X: `X` the response did not complete (the client left, or it was cut), `+` the connection may be
   * kept alive after it, `-` it closes. Absent for a request refused before it was parsed: `-`.
   */
  connectionStatus?: 'X' | '+' | '-';
  /** The request's header fields (lower-case names), for a LogFormat's %{Name}i. */
  headers?: Readonly<Record<string, string | string[] | undefined>>;
  /**
   * A request refused before it was parsed: Apache's %r is then the request line as it came ('' when none
   * did), and method, url and httpVersion are not used.
   */
  requestLine?: string;
}

/** `%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"`: Apache's combined format. */
export function combinedLine(entry: AccessEntry): string {
  const request =
    entry.requestLine === undefined
      ? escapeLogValue(`${entry.method} ${entry.url} HTTP/${entry.httpVersion}`)
      : escapeLogValue(entry.requestLine) || '-';
  const bytes = entry.bytes > 0 ? String(entry.bytes) : '-';
  const referer = entry.referer ? escapeLogValue(entry.referer) : '-';
  const userAgent = entry.userAgent ? escapeLogValue(entry.userAgent) : '-';
  return `${entry.remoteAddress} - - [${accessLogTime(entry.time)}] "${request}" ${entry.status} ${bytes} "${referer}" "${userAgent}"`;
}

export interface ErrorEntry {
  module: string;
  level: LogLevel;
  /** Apache's %E: the OS or library status before the client, e.g. `(OS 2)The system cannot find the file specified.` */
  status?: string;
  client?: string;
  message: string;
  /** The request's Referer, which Apache appends to a request's error line (log.c, `, referer: %s`). */
  referer?: string;
  requestId?: string;
}

/**
 * Apache 2.4's default ErrorLogFormat, with the request id after the referer Apache appends:
 * `[%{u}t] [%-m:%l] [pid %P] %E: [client %a] %M, referer: %{Referer}i, request_id: %L`.
 */
export function errorLine(entry: ErrorEntry, micros: number, pid: number): string {
  // One template, not a chain of +=: this runs for every missing file and failed forward.
  const status = entry.status ? `${entry.status}: ` : '';
  const client = entry.client ? `[client ${entry.client}] ` : '';
  const referer = entry.referer ? `, referer: ${escapeLogValue(entry.referer, false)}` : '';
  const id = entry.requestId ? `, request_id: ${escapeLogValue(entry.requestId, false)}` : '';
  return `[${errorLogTime(micros)}] [${entry.module}:${entry.level}] [pid ${pid}] ${status}${client}${escapeLogValue(entry.message, false)}${referer}${id}`;
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
  level: 'error' | 'warn' | 'notice' | 'info' | 'debug';
  requestId?: string;
  message: string;
  /** The process the event happened in (a host worker); only the JSON layout shows it. */
  pid?: number;
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

// JSON layouts. Field names are part of the interface (docs/logs.md, JSON): a collector keys on them, so they
// only ever grow. Every field is present in every line of its file, null when there is no value.
// JSON.stringify escapes control characters, so a client value can neither split nor forge a line.

/** access.log as JSON: `{"time","client","method","url","protocol","status","bytes","referer","user_agent","request_id"}`. */
export function accessJson(entry: AccessEntry): string {
  return JSON.stringify({
    time: entry.time.toISOString(),
    client: entry.remoteAddress,
    // A refused request's line as it came goes in `url`: it may not hold a method or a protocol.
    method: entry.requestLine === undefined ? entry.method : null,
    url: entry.requestLine ?? entry.url,
    protocol: entry.requestLine === undefined ? `HTTP/${entry.httpVersion}` : null,
    status: entry.status,
    bytes: entry.bytes,
    referer: entry.referer ?? null,
    user_agent: entry.userAgent ?? null,
    request_id: entry.requestId ?? null,
  });
}

/** error.log as JSON: `{"time","level","module","pid","client","status","message","referer","request_id"}`; time with microseconds. */
export function errorJson(entry: ErrorEntry, micros: number, pid: number): string {
  const ms = Math.floor(micros / 1000);
  // toISOString gives milliseconds; the error log keeps Apache's microseconds.
  const time = `${new Date(ms).toISOString().slice(0, -1)}${pad(micros % 1000, 3)}Z`;
  return JSON.stringify({
    time,
    level: entry.level,
    module: entry.module,
    pid,
    client: entry.client ?? null,
    status: entry.status ?? null,
    message: entry.message,
    referer: entry.referer ?? null,
    request_id: entry.requestId ?? null,
  });
}

/** host.log as JSON: `{"time","level","pid","request_id","message"}`; a stack stays inside `message`. */
export function hostJson(entry: HostEntry, pid: number): string {
  return JSON.stringify({
    time: entry.time.toISOString(),
    level: entry.level,
    pid: entry.pid ?? pid,
    request_id: entry.requestId ?? null,
    message: entry.message,
  });
}

/** The directives an Apache LogFormat string may use here (mod_log_config), each a function of the entry. */
const DIRECTIVES: Readonly<Record<string, (entry: AccessEntry) => string>> = {
  h: (entry) => entry.remoteAddress,
  a: (entry) => entry.remoteAddress,
  l: () => '-',
  u: () => '-',
  t: (entry) => `[${accessLogTime(entry.time)}]`,
  r: (entry) =>
    entry.requestLine === undefined
      ? escapeLogValue(`${entry.method} ${entry.url} HTTP/${entry.httpVersion}`)
      : escapeLogValue(entry.requestLine) || '-',
  s: (entry) => String(entry.status),
  '>s': (entry) => String(entry.status),
  b: (entry) => (entry.bytes > 0 ? String(entry.bytes) : '-'),
  B: (entry) => String(entry.bytes),
  m: (entry) => (entry.requestLine === undefined ? escapeLogValue(entry.method) : '-'),
  U: (entry) => (entry.requestLine === undefined ? escapeLogValue(entry.url.split('?')[0]) : '-'),
  q: (entry) => {
    const at = entry.requestLine === undefined ? entry.url.indexOf('?') : -1;
    return at === -1 ? '' : escapeLogValue(entry.url.slice(at));
  },
  H: (entry) => (entry.requestLine === undefined ? `HTTP/${entry.httpVersion}` : '-'),
  D: (entry) => String(entry.durationMicros ?? 0),
  T: (entry) => String(Math.floor((entry.durationMicros ?? 0) / 1_000_000)),
  L: (entry) => (entry.requestId ? escapeLogValue(entry.requestId) : '-'),
  X: (entry) => entry.connectionStatus ?? '-',
  '%': () => '%',
};

/** The directives, as an operator reads them in a refusal. */
const DIRECTIVE_LIST = `${Object.keys(DIRECTIVES)
  .filter((name) => name !== '%')
  .map((name) => `%${name}`)
  .join(' ')} %{Name}i %%`;

/** `%{Name}i`: a request header, escaped, `-` when absent; several fields of one name joined as Apache does. */
function requestHeader(name: string): (entry: AccessEntry) => string {
  const key = name.toLowerCase();
  return (entry) => {
    const value = entry.headers?.[key];
    const text = Array.isArray(value) ? value.join(', ') : value;
    return text ? escapeLogValue(text) : '-';
  };
}

/** `%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"`: what `combined` writes, as a LogFormat string. */
export const COMBINED_FORMAT = '%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"';

/**
 * Compiles an Apache LogFormat string (`%h %t "%r" %>s %D %{User-Agent}i`) into a line function: the string
 * is split once into literal text and directive functions, so a line is one join. Throws a message naming
 * the first directive it does not know; a directive's conditions (`%400,501{…}i`) are not supported.
 */
export function compileAccessFormat(format: string): (entry: AccessEntry) => string {
  const parts: ((entry: AccessEntry) => string)[] = [];
  const pattern = /%(?:\{([^}]*)\}([a-zA-Z])|(>s|[a-zA-Z%]))|([^%]+)|(%.?)/gy;
  for (const match of format.matchAll(pattern)) {
    const [, name, braced, plain, literal, bad] = match;
    if (literal !== undefined) parts.push(() => literal);
    else if (braced === 'i') parts.push(requestHeader(name));
    else if (plain !== undefined && DIRECTIVES[plain]) parts.push(DIRECTIVES[plain]);
    else throw new Error(`${bad ?? match[0]} is not one of ${DIRECTIVE_LIST}`);
  }
  return (entry) => parts.map((part) => part(entry)).join('');
}

/** The access-line function of a --log-format value. */
export function accessFormatter(logFormat: LogFormat): (entry: AccessEntry) => string {
  if (logFormat === 'json') return accessJson;
  if (logFormat === 'combined') return combinedLine;
  return compileAccessFormat(logFormat);
}
