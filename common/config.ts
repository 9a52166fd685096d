// The one validated configuration: flags, then environment, then defaults.
// Every process (launcher, proxy, host) reads it the same way; a bad value stops start-up
// with a message naming the setting, the value and what is allowed.
import { parseArgs } from 'node:util';
import { isIP } from 'node:net';
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
}

export class ConfigError extends Error {
  readonly code = 'EXTQS_CONFIG';
  constructor(readonly setting: string, readonly value: string, allowed: string) {
    super(`${setting} must be ${allowed}, got ${JSON.stringify(value)}`);
    this.name = 'ConfigError';
  }
}

const flags = {
  port: { type: 'string', env: 'PORT', fallback: '8080' },
  listen: { type: 'string', env: 'LISTEN', fallback: '0.0.0.0' },
  www: { type: 'string', env: 'WWW_ROOT', fallback: './www' },
  logs: { type: 'string', env: 'LOG_DIR', fallback: './logs' },
  upstream: { type: 'string', env: 'EXTQS_UPSTREAM', fallback: '' },
  socket: { type: 'string', env: 'EXTQS_SOCKET', fallback: '' },
  'host-port': { type: 'string', env: 'EXTQS_HOST_PORT', fallback: '0' },
} as const;

type FlagName = keyof typeof flags;

function label(name: FlagName): string {
  return `--${name} (${flags[name].env})`;
}

export function parsePort(name: FlagName, raw: string): number {
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) {
    throw new ConfigError(label(name), raw, 'an integer from 0 to 65535');
  }
  return Number(raw);
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
    throw new ConfigError('command line', argv.join(' '), `made of --port, --listen, --www and --logs with values (${(err as Error).message})`);
  }
  const pick = (name: FlagName): string => values[name] ?? env[flags[name].env] ?? flags[name].fallback;

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
  });
}

/** The flags that reproduce a config in a child process. */
export function configToArgs(config: Config): string[] {
  const args = ['--port', String(config.port), '--listen', config.listen, '--www', config.www, '--logs', config.logs];
  if (config.upstream) args.push('--upstream', formatUpstream(config.upstream));
  if (config.socket) args.push('--socket', config.socket);
  return args;
}
