// The one validated configuration: flags, then environment, then defaults.
// Every process (launcher, proxy, host) reads it the same way; a bad value stops start-up
// with a message naming the setting, the value and what is allowed.
import { parseArgs } from 'node:util';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { statSync, mkdirSync, accessSync, constants, readFileSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './logFormat.ts';

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
  /** Where the proxy forwards /External, in round-robin order (the launcher sets one; repeat the flag for more). */
  readonly upstreams: readonly Upstream[];
  /** Connect failures in a row after which an upstream is skipped (nginx max_fails). */
  readonly upstreamMaxFails: number;
  /** Seconds a failed upstream is skipped before it is tried again (nginx fail_timeout). */
  readonly upstreamFailTimeout: number;
  /** Unix socket the host binds (set by the launcher); without it the host binds 127.0.0.1:--host-port. */
  readonly socket: string | undefined;
  /** Address the host binds when it runs without --socket: loopback unless the host serves proxies on other machines. */
  readonly hostListen: string;
  /** Port of the host when it runs without --socket (0 = any free port). */
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
  /** Lines of error.log and host.log below this Apache level are not written (access.log is not levelled). */
  readonly logLevel: LogLevel;
  /** `combined` (Apache's text layouts) or `json` (one object a line). */
  readonly logFormat: LogFormat;
  /** Bytes after which a log file is rotated; 0 = never (external logrotate + SIGHUP instead). */
  readonly logMaxSize: number;
  /** Rotated files kept per log (`access.log.1` … `access.log.N`). */
  readonly logMaxFiles: number;
  /** The optional settings file (`NAME=value` lines), read again on SIGHUP. */
  readonly configFile: string | undefined;
  /** Seconds a stop (SIGTERM/SIGINT) waits for requests in flight before it cuts them. */
  readonly shutdownTimeout: number;
  /** Clients allowed to see /server-status (Apache `Require ip`). */
  readonly statusAllow: readonly AllowedClient[];
  /** The proxy's timeouts and limits against slow or hostile clients. */
  readonly limits: ClientLimits;
}

/** Apache's RequestReadTimeout, Timeout, KeepAliveTimeout, LimitRequestFieldSize and LimitRequestFields, for the proxy's clients. */
export interface ClientLimits {
  /** Seconds a client has to send the whole request head (Apache RequestReadTimeout header=20); else 408 and the connection is cut. */
  readonly headerTimeout: number;
  /** Seconds a client has to send the whole request, body included (Apache Timeout 60); else 408. */
  readonly requestTimeout: number;
  /** Seconds an idle keep-alive connection is kept (Apache KeepAliveTimeout 5); below the host's 75 s. 0 = no keep-alive (nginx keepalive_timeout 0). */
  readonly keepAliveTimeout: number;
  /** Bytes of request line and header fields together; past it 431 (Node counts them together, Apache per field: 8190). */
  readonly maxHeaderSize: number;
  /** Header fields in one request; past it 400 (Apache LimitRequestFields 100). */
  readonly maxHeaderFields: number;
  /** Open client connections at once; new ones past it are closed at once. 0 = no cap. */
  readonly maxConnections: number;
}

/** An address or subnet (CIDR) allowed a page. */
export interface AllowedClient {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/** The settings a SIGHUP applies without a restart. */
export const LIVE_SETTINGS = ['logLevel', 'logFormat', 'logMaxSize', 'logMaxFiles'] as const satisfies readonly (keyof Config)[];
export type LogSettings = Pick<Config, (typeof LIVE_SETTINGS)[number]>;

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
  // Repeatable; in the environment, a comma-separated list.
  upstream: { env: 'EXTQS_UPSTREAM', fallback: '' },
  'upstream-max-fails': { env: 'UPSTREAM_MAX_FAILS', fallback: '1' },
  'upstream-fail-timeout': { env: 'UPSTREAM_FAIL_TIMEOUT', fallback: '10' },
  socket: { env: 'EXTQS_SOCKET', fallback: '' },
  'host-listen': { env: 'EXTQS_HOST_LISTEN', fallback: '127.0.0.1' },
  'host-port': { env: 'EXTQS_HOST_PORT', fallback: '0' },
  workers: { env: 'WORKERS', fallback: () => String(Math.min(availableParallelism(), MAX_WORKERS)) },
  'max-requests': { env: 'MAX_REQUESTS', fallback: '0' },
  'max-execution-time': { env: 'MAX_EXECUTION_TIME', fallback: '30' },
  // By default the proxy waits exactly as long as a controller may run.
  'upstream-timeout': { env: 'UPSTREAM_TIMEOUT', fallback: (pick: (name: 'max-execution-time') => string) => pick('max-execution-time') },
  // undici measured twice as fast as http-proxy on controller JSON (README, Performance).
  forwarder: { env: 'FORWARDER', fallback: 'undici' },
  // By default a stop lets every controller run out its limit (and 5 s to answer).
  'shutdown-timeout': {
    env: 'SHUTDOWN_TIMEOUT',
    fallback: (pick: (name: 'max-execution-time') => string) => String((Number(pick('max-execution-time')) || 30) + 5),
  },
  // Loopback only, as Apache's default `Require local`.
  'status-allow': { env: 'STATUS_ALLOW', fallback: '127.0.0.0/8,::1' },
  // The favicon miss is a [core:info] line and must show by default, so the default is info.
  'log-level': { env: 'LOG_LEVEL', fallback: 'info' },
  'log-format': { env: 'LOG_FORMAT', fallback: 'combined' },
  'log-max-size': { env: 'LOG_MAX_SIZE', fallback: '0' },
  'log-max-files': { env: 'LOG_MAX_FILES', fallback: '5' },
  config: { env: 'EXTQS_CONFIG', fallback: '' },
  // The proxy's limits against slow or hostile clients (ClientLimits): Apache's defaults.
  'header-timeout': { env: 'HEADER_TIMEOUT', fallback: '20' },
  'request-timeout': { env: 'REQUEST_TIMEOUT', fallback: '60' },
  'keep-alive-timeout': { env: 'KEEP_ALIVE_TIMEOUT', fallback: '5' },
  'max-header-size': { env: 'MAX_HEADER_SIZE', fallback: '16384' },
  'max-header-fields': { env: 'MAX_HEADER_FIELDS', fallback: '100' },
  'max-connections': { env: 'MAX_CONNECTIONS', fallback: '0' },
} as const;

type FlagName = keyof typeof flags;

const REPEATABLE = new Set<string>(['upstream']);

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

function parseLogLevel(raw: string): LogLevel {
  if (!(LOG_LEVELS as readonly string[]).includes(raw)) throw new ConfigError(label('log-level'), raw, `one of ${LOG_LEVELS.join(', ')}`);
  return raw as LogLevel;
}

function parseLogFormat(raw: string): LogFormat {
  if (!(LOG_FORMATS as readonly string[]).includes(raw)) throw new ConfigError(label('log-format'), raw, `one of ${LOG_FORMATS.join(', ')}`);
  return raw as LogFormat;
}

const SIZE_UNITS: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/** Bytes, with an optional k, m or g suffix (powers of 1024): `0`, `65536`, `512k`, `100m`. */
function parseSize(raw: string): number {
  const match = /^(\d{1,9})([kmg]?)$/i.exec(raw);
  if (!match) throw new ConfigError(label('log-max-size'), raw, 'a size in bytes, optionally with k, m or g (e.g. 0 = never, 512k, 100m)');
  return Number(match[1]) * SIZE_UNITS[match[2].toLowerCase()];
}

/**
 * The settings file: `NAME=value` lines with the environment names (`LOG_LEVEL=debug`), `#` comments
 * and blank lines. It ranks below flags and the environment, above the defaults.
 */
export function parseConfigFile(text: string, file: string): Record<string, string> {
  const known = new Set<string>(CONFIG_ENV_NAMES);
  const values: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = /^([A-Z_][A-Z0-9_]*)\s*=\s*(.*)$/.exec(line);
    const where = `${file}:${index + 1}`;
    if (!match) throw new ConfigError(where, line, 'NAME=value');
    if (!known.has(match[1]) || match[1] === 'EXTQS_CONFIG') throw new ConfigError(where, match[1], `one of ${[...known].filter((n) => n !== 'EXTQS_CONFIG').join(', ')}`);
    values[match[1]] = match[2].replace(/^"(.*)"$/, '$1');
  });
  return values;
}

function readConfigFile(raw: string, cwd: string): { path: string; values: Record<string, string> } {
  const path = resolve(cwd, raw);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(label('config'), raw, `a readable file of NAME=value lines (${(err as Error).message})`);
  }
  return { path, values: parseConfigFile(text, path) };
}

export function parseListen(raw: string, name: FlagName = 'listen'): string {
  if (raw !== 'localhost' && isIP(raw) === 0) {
    throw new ConfigError(label(name), raw, 'an IPv4 or IPv6 address (e.g. 0.0.0.0, 127.0.0.1, ::) or localhost');
  }
  return raw;
}

const UPSTREAM_ALLOWED = 'unix:/path/to/socket or http://<host>:<port>';

export function parseUpstream(raw: string): Upstream {
  if (raw.startsWith('unix:') && raw.length > 'unix:'.length) {
    return { kind: 'unix', path: resolve(raw.slice('unix:'.length)) };
  }
  // A host name, an IPv4 address or a bracketed IPv6 address; nothing after the port but an optional '/'.
  const match = /^http:\/\/([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})\/?$/.exec(raw);
  const host = match?.[1].replace(/^\[|\]$/g, '');
  if (match && host && (!match[1].startsWith('[') || isIP(host) === 6) && Number(match[2]) > 0 && Number(match[2]) <= 65535) {
    return { kind: 'tcp', host, port: Number(match[2]) };
  }
  throw new ConfigError(label('upstream'), raw, UPSTREAM_ALLOWED);
}

/** A comma-separated list of addresses and CIDR subnets: `127.0.0.0/8,::1,10.1.0.0/16`. */
export function parseAllowList(raw: string): AllowedClient[] {
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
    .map((item) => {
      const [address, prefix, extra] = item.split('/');
      const family = isIP(address) === 4 ? 'ipv4' : isIP(address) === 6 ? 'ipv6' : undefined;
      const bits = family === 'ipv4' ? 32 : 128;
      if (!family || extra !== undefined || (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits))) {
        throw new ConfigError(label('status-allow'), raw, `a comma-separated list of IP addresses or CIDR subnets (e.g. 127.0.0.0/8,::1,10.1.0.0/16); ${JSON.stringify(item)} is not one`);
      }
      return { address, prefix: prefix === undefined ? bits : Number(prefix), family };
    });
}

/** Each of the repeated flag's values, or the environment's comma-separated list. */
function parseUpstreams(raws: readonly string[]): Upstream[] {
  const upstreams = raws.flatMap((raw) => raw.split(',')).map((raw) => raw.trim()).filter((raw) => raw !== '').map(parseUpstream);
  const names = upstreams.map(formatUpstream);
  const repeated = names.find((name, i) => names.indexOf(name) !== i);
  if (repeated) throw new ConfigError(label('upstream'), repeated, `${UPSTREAM_ALLOWED}, each given once`);
  return upstreams;
}

export function formatUpstream(upstream: Upstream): string {
  if (upstream.kind === 'unix') return `unix:${upstream.path}`;
  return `http://${upstream.host.includes(':') ? `[${upstream.host}]` : upstream.host}:${upstream.port}`;
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
    const options = Object.fromEntries(Object.keys(flags).map((name) => [name, { type: 'string' as const, multiple: REPEATABLE.has(name) }]));
    // A repeatable flag's values are joined the way its environment variable lists them.
    const parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values as Record<string, string | string[]>;
    values = Object.fromEntries(Object.entries(parsed).map(([name, value]) => [name, Array.isArray(value) ? value.join(',') : value]));
  } catch (err) {
    const known = Object.keys(flags).map((name) => `--${name}`).join(', ');
    throw new ConfigError('command line', argv.join(' '), `made of ${known}, each with a value (${(err as Error).message})`);
  }
  const configRaw = values.config ?? env[flags.config.env] ?? '';
  const file = configRaw === '' ? undefined : readConfigFile(configRaw, cwd);
  const pick = (name: FlagName): string => {
    const given = values[name] ?? env[flags[name].env] ?? file?.values[flags[name].env];
    if (given !== undefined) return given;
    const fallback = flags[name].fallback;
    return typeof fallback === 'function' ? fallback(pick) : fallback;
  };

  const socket = pick('socket');
  return Object.freeze({
    port: parsePort('port', pick('port')),
    listen: parseListen(pick('listen')),
    www: checkWww(pick('www'), cwd),
    logs: checkLogs(pick('logs'), cwd),
    upstreams: parseUpstreams([pick('upstream')]),
    upstreamMaxFails: parseInteger('upstream-max-fails', pick('upstream-max-fails'), 1, 1000),
    upstreamFailTimeout: parseInteger('upstream-fail-timeout', pick('upstream-fail-timeout'), 0, 86_400),
    socket: socket === '' ? undefined : resolve(cwd, socket),
    hostListen: parseListen(pick('host-listen'), 'host-listen'),
    hostPort: parsePort('host-port', pick('host-port')),
    workers: parseInteger('workers', pick('workers'), 1, MAX_WORKERS),
    maxRequests: parseInteger('max-requests', pick('max-requests'), 0, 1_000_000_000),
    maxExecutionTime: parseInteger('max-execution-time', pick('max-execution-time'), 0, 86_400),
    upstreamTimeout: parseInteger('upstream-timeout', pick('upstream-timeout'), 0, 86_400),
    forwarder: parseForwarder(pick('forwarder')),
    shutdownTimeout: parseInteger('shutdown-timeout', pick('shutdown-timeout'), 0, 86_400),
    statusAllow: parseAllowList(pick('status-allow')),
    logLevel: parseLogLevel(pick('log-level')),
    logFormat: parseLogFormat(pick('log-format')),
    logMaxSize: parseSize(pick('log-max-size')),
    logMaxFiles: parseInteger('log-max-files', pick('log-max-files'), 1, 1000),
    configFile: file?.path,
    limits: parseLimits(pick),
  });
}

export function logSettingsOf(config: Config): LogSettings {
  return { logLevel: config.logLevel, logFormat: config.logFormat, logMaxSize: config.logMaxSize, logMaxFiles: config.logMaxFiles };
}

/** `log-max-size` for `logMaxSize`. */
function flagOf(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** Each setting under the flag that sets it, as an operator would write its value. */
function settingsByFlag(config: Config): Map<string, string> {
  const { limits, upstreams, statusAllow, configFile, ...plain } = config;
  const settings = new Map<string, string>();
  for (const [key, value] of [...Object.entries(plain), ...Object.entries(limits)]) {
    settings.set(flagOf(key), JSON.stringify(value));
  }
  settings.set('upstream', JSON.stringify(upstreams.map(formatUpstream).join(',')));
  settings.set('status-allow', JSON.stringify(statusAllow.map(({ address, prefix }) => `${address}/${prefix}`).join(',')));
  settings.set('config', JSON.stringify(configFile));
  return settings;
}

const LIVE_FLAGS = new Set<string>(LIVE_SETTINGS.map(flagOf));

/** What a configuration read again (SIGHUP) changes, by flag: live settings are applied, the others need a restart. */
export function configChanges(running: Config, fresh: Config): { live: string[]; restart: string[] } {
  const live: string[] = [];
  const restart: string[] = [];
  const after = settingsByFlag(fresh);
  for (const [flag, before] of settingsByFlag(running)) {
    if (before === after.get(flag)) continue;
    (LIVE_FLAGS.has(flag) ? live : restart).push(`--${flag} ${before} -> ${after.get(flag)}`);
  }
  return { live, restart };
}
