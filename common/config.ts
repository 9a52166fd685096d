// The one validated configuration: flags, then environment, then defaults.
// Every process (launcher, proxy, host) reads it the same way; a bad value stops start-up
// with a message naming the setting, the value and what is allowed.
import { parseArgs } from 'node:util';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { statSync, mkdirSync, accessSync, constants } from 'node:fs';
import { resolve, join } from 'node:path';

export type Upstream = { kind: 'tcp'; host: string; port: number } | { kind: 'unix'; path: string };

export interface Config {
  /** Public port of the proxy (0 = any free port). */
  readonly port: number;
  /** Address the proxy binds. */
  readonly listen: string;
  /** Absolute path of the www root (holds public/ and controllers/). */
  readonly www: string;
  /** Absolute path of the log directory. */
  readonly logs: string;
  /** Where the proxy forwards /External (set by the launcher). */
  readonly upstream: Upstream | undefined;
  /** Unix socket the host binds (set by the launcher); without it the host binds 127.0.0.1:--host-port. */
  readonly socket: string | undefined;
  /** Loopback port of the host when it runs without --socket (0 = any free port). */
  readonly hostPort: number;
  /** Host worker processes (php-fpm pm.max_children). */
  readonly workers: number;
  /** Requests after which a host worker is recycled; 0 = never (php-fpm pm.max_requests). */
  readonly maxRequests: number;
  /** Seconds a controller may run; 0 = no limit (PHP max_execution_time). */
  readonly maxExecutionTime: number;
  /** Seconds the proxy waits for the host's response headers before it answers 504; 0 = no limit. */
  readonly upstreamTimeout: number;
  /** The proxy's forwarding engine. */
  readonly forwarder: Forwarder;
  /** The proxy's timeouts and limits against slow or hostile clients. */
  readonly limits: ClientLimits;
}

/** Apache's RequestReadTimeout, Timeout, KeepAliveTimeout, LimitRequestFieldSize and LimitRequestFields, for the proxy's clients. */
export interface ClientLimits {
  /** Seconds a client has to send the whole request head (Apache RequestReadTimeout header=20); else 408 and the connection is cut. */
  readonly headerTimeout: number;
  /** Seconds a client has to send the whole request, body included (Apache Timeout 60); else 408. */
  readonly requestTimeout: number;
  /** Seconds an idle keep-alive connection is kept (Apache KeepAliveTimeout 5); below the host's 75 s. */
  readonly keepAliveTimeout: number;
  /** Bytes of request line and header fields together; past it 431 (Node counts them together, Apache per field: 8190). */
  readonly maxHeaderSize: number;
  /** Header fields in one request; past it 400 (Apache LimitRequestFields 100). */
  readonly maxHeaderFields: number;
  /** Open client connections at once; new ones past it are closed at once. 0 = no cap. */
  readonly maxConnections: number;
}

export const FORWARDERS = ['undici', 'http-proxy'] as const;
export type Forwarder = (typeof FORWARDERS)[number];

export class ConfigError extends Error {
  readonly code = 'EXTQS_CONFIG';
  constructor(readonly setting: string, readonly value: string, allowed: string) {
    super(`${setting} must be ${allowed}, got ${JSON.stringify(value)}`);
    this.name = 'ConfigError';
  }
}

const MAX_WORKERS = 256;

/** Each setting: its environment name and its default (a function where it depends on the machine or another setting). */
const flags = {
  port: { env: 'PORT', fallback: '8080' },
  listen: { env: 'LISTEN', fallback: '0.0.0.0' },
  www: { env: 'WWW_ROOT', fallback: './www' },
  logs: { env: 'LOG_DIR', fallback: './logs' },
  upstream: { env: 'EXTQS_UPSTREAM', fallback: '' },
  socket: { env: 'EXTQS_SOCKET', fallback: '' },
  'host-port': { env: 'EXTQS_HOST_PORT', fallback: '0' },
  workers: { env: 'WORKERS', fallback: () => String(Math.min(availableParallelism(), MAX_WORKERS)) },
  'max-requests': { env: 'MAX_REQUESTS', fallback: '0' },
  'max-execution-time': { env: 'MAX_EXECUTION_TIME', fallback: '30' },
  // By default the proxy waits exactly as long as a controller may run.
  'upstream-timeout': { env: 'UPSTREAM_TIMEOUT', fallback: (pick: (name: 'max-execution-time') => string) => pick('max-execution-time') },
  // undici measured twice as fast as http-proxy on controller JSON (README, Performance).
  forwarder: { env: 'FORWARDER', fallback: 'undici' },
  // The proxy's limits against slow or hostile clients (ClientLimits): Apache's defaults.
  'header-timeout': { env: 'HEADER_TIMEOUT', fallback: '20' },
  'request-timeout': { env: 'REQUEST_TIMEOUT', fallback: '60' },
  'keep-alive-timeout': { env: 'KEEP_ALIVE_TIMEOUT', fallback: '5' },
  'max-header-size': { env: 'MAX_HEADER_SIZE', fallback: '16384' },
  'max-header-fields': { env: 'MAX_HEADER_FIELDS', fallback: '100' },
  'max-connections': { env: 'MAX_CONNECTIONS', fallback: '0' },
} as const;

type FlagName = keyof typeof flags;

/** The environment variables this configuration reads. */
export const CONFIG_ENV_NAMES: readonly string[] = Object.values(flags).map((flag) => flag.env);

function label(name: FlagName): string {
  return `--${name} (${flags[name].env})`;
}

export function parsePort(name: FlagName, raw: string): number {
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) {
    throw new ConfigError(label(name), raw, 'an integer from 0 to 65535');
  }
  return Number(raw);
}

function parseInteger(name: FlagName, raw: string, min: number, max: number): number {
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(label(name), raw, `an integer from ${min} to ${max}`);
  }
  return Number(raw);
}

function parseForwarder(raw: string): Forwarder {
  if (!(FORWARDERS as readonly string[]).includes(raw)) throw new ConfigError(label('forwarder'), raw, `one of ${FORWARDERS.join(', ')}`);
  return raw as Forwarder;
}

export function parseListen(raw: string): string {
  if (raw !== 'localhost' && isIP(raw) === 0) {
    throw new ConfigError(label('listen'), raw, 'an IPv4 or IPv6 address (e.g. 0.0.0.0, 127.0.0.1, ::) or localhost');
  }
  return raw;
}

export function parseUpstream(raw: string): Upstream {
  if (raw.startsWith('unix:') && raw.length > 'unix:'.length) {
    return { kind: 'unix', path: resolve(raw.slice('unix:'.length)) };
  }
  const match = /^http:\/\/(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1\]):(\d{1,5})\/?$/.exec(raw);
  if (match && Number(match[2]) > 0 && Number(match[2]) <= 65535) {
    return { kind: 'tcp', host: match[1].replace(/^\[|\]$/g, ''), port: Number(match[2]) };
  }
  throw new ConfigError(label('upstream'), raw, 'unix:/path/to/socket or http://<loopback address>:<port>');
}

export function formatUpstream(upstream: Upstream): string {
  return upstream.kind === 'unix' ? `unix:${upstream.path}` : `http://${upstream.host}:${upstream.port}`;
}

/** The host keeps idle sockets 75 s (host/app.ts); the proxy's own clients get less, as Apache's 5 s. */
const MAX_KEEP_ALIVE_TIMEOUT = 60;

function parseLimits(pick: (name: FlagName) => string): ClientLimits {
  const headerTimeout = parseInteger('header-timeout', pick('header-timeout'), 1, 3_600);
  const requestTimeout = parseInteger('request-timeout', pick('request-timeout'), 1, 86_400);
  // Node refuses a head deadline later than the whole request's, and it would mean nothing.
  if (requestTimeout < headerTimeout) {
    throw new ConfigError(label('request-timeout'), String(requestTimeout), `at least --header-timeout (${headerTimeout})`);
  }
  return Object.freeze({
    headerTimeout,
    requestTimeout,
    keepAliveTimeout: parseInteger('keep-alive-timeout', pick('keep-alive-timeout'), 0, MAX_KEEP_ALIVE_TIMEOUT),
    maxHeaderSize: parseInteger('max-header-size', pick('max-header-size'), 1_024, 1_048_576),
    maxHeaderFields: parseInteger('max-header-fields', pick('max-header-fields'), 1, 10_000),
    maxConnections: parseInteger('max-connections', pick('max-connections'), 0, 1_000_000),
  });
}

function checkWww(raw: string, cwd: string): string {
  const www = resolve(cwd, raw);
  for (const sub of ['public', 'controllers']) {
    const dir = join(www, sub);
    let isDir = false;
    try {
      isDir = statSync(dir).isDirectory();
    } catch {
      isDir = false;
    }
    if (!isDir) throw new ConfigError(label('www'), raw, `a directory holding public/ and controllers/ (${dir} is missing)`);
  }
  return www;
}

function checkLogs(raw: string, cwd: string): string {
  const logs = resolve(cwd, raw);
  try {
    mkdirSync(logs, { recursive: true });
    accessSync(logs, constants.W_OK);
  } catch (err) {
    throw new ConfigError(label('logs'), raw, `a writable directory (${(err as Error).message})`);
  }
  return logs;
}

/** Reads and validates the configuration; throws ConfigError on the first bad value. */
export function readConfig(argv: string[], env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  let values: Partial<Record<FlagName, string>>;
  try {
    const options = Object.fromEntries(Object.keys(flags).map((name) => [name, { type: 'string' as const }]));
    ({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }) as {
      values: Partial<Record<FlagName, string>>;
    });
  } catch (err) {
    const known = Object.keys(flags).map((name) => `--${name}`).join(', ');
    throw new ConfigError('command line', argv.join(' '), `made of ${known}, each with a value (${(err as Error).message})`);
  }
  const pick = (name: FlagName): string => {
    const given = values[name] ?? env[flags[name].env];
    if (given !== undefined) return given;
    const fallback = flags[name].fallback;
    return typeof fallback === 'function' ? fallback(pick) : fallback;
  };

  const upstream = pick('upstream');
  const socket = pick('socket');
  return Object.freeze({
    port: parsePort('port', pick('port')),
    listen: parseListen(pick('listen')),
    www: checkWww(pick('www'), cwd),
    logs: checkLogs(pick('logs'), cwd),
    upstream: upstream === '' ? undefined : parseUpstream(upstream),
    socket: socket === '' ? undefined : resolve(cwd, socket),
    hostPort: parsePort('host-port', pick('host-port')),
    workers: parseInteger('workers', pick('workers'), 1, MAX_WORKERS),
    maxRequests: parseInteger('max-requests', pick('max-requests'), 0, 1_000_000_000),
    maxExecutionTime: parseInteger('max-execution-time', pick('max-execution-time'), 0, 86_400),
    upstreamTimeout: parseInteger('upstream-timeout', pick('upstream-timeout'), 0, 86_400),
    forwarder: parseForwarder(pick('forwarder')),
    limits: parseLimits(pick),
  });
}
