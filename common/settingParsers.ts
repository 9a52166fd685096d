// How each kind of setting value is read from its text: pure functions that return the value or throw
// the ConfigError `fail` builds (it names the setting; the parser says what is allowed).
import { accessSync, constants, mkdirSync, readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname, join, resolve } from 'node:path';

/** What a parser is given besides the text: where relative paths start, and how to refuse the value. */
export interface ParseContext {
  readonly cwd: string;
  fail: (allowed: string) => never;
}

export type Parser<T> = (raw: string, context: ParseContext) => T;

/** `tls`: an `https://` upstream, reached with --mtls-cert, --mtls-key and --mtls-ca (docs/design.md §12). */
export type Upstream = ({ kind: 'tcp'; host: string; port: number; tls?: true } | { kind: 'unix'; path: string }) & {
  /** Its name in /metrics' series when its address changes at each start (the launcher's own socket); else formatUpstream(). */
  label?: string;
};

/** The label of the launcher's own host socket, whose directory is new at each start. */
export const LOCAL_UPSTREAM_LABEL = 'local';

/** An address or subnet (CIDR) allowed a page. */
export interface AllowedClient {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

export function integer(min: number, max: number): Parser<number> {
  return (raw, { fail }) => {
    if (!/^\d{1,9}$/.test(raw) || Number(raw) < min || Number(raw) > max) fail(`an integer from ${min} to ${max}`);
    return Number(raw);
  };
}

export const port: Parser<number> = (raw, { fail }) => {
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) fail('an integer from 0 to 65535');
  return Number(raw);
};

/** A port, or none (empty or `none`): a listener that is not opened. */
export const optionalPort: Parser<number | undefined> = (raw, { fail }) => {
  if (raw === '' || raw.toLowerCase() === 'none') return undefined;
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) fail('none, or an integer from 0 to 65535');
  return Number(raw);
};

export function oneOf<const T extends string>(choices: readonly T[]): Parser<T> {
  return (raw, { fail }) => {
    if (!(choices as readonly string[]).includes(raw)) fail(`one of ${choices.join(', ')}`);
    return raw as T;
  };
}

/**
 * A comma-separated set drawn from `choices`, each at most once, or `off` for none: `gzip,br`, `br`, `off`.
 * The order written does not matter.
 */
export function setOf<const T extends string>(choices: readonly T[]): Parser<readonly T[]> {
  const allowed = `off, or one or more of ${choices.join(', ')} separated by commas (e.g. ${choices.join(',')})`;
  return (raw, { fail }) => {
    if (raw.trim().toLowerCase() === 'off') return [];
    const items = raw.split(',').map((item) => item.trim().toLowerCase());
    if (items.some((item) => !(choices as readonly string[]).includes(item))) fail(allowed);
    if (new Set(items).size !== items.length) fail(`${allowed}, each once`);
    return choices.filter((choice) => items.includes(choice));
  };
}

export const address: Parser<string> = (raw, { fail }) => {
  if (raw !== 'localhost' && isIP(raw) === 0) fail('an IPv4 or IPv6 address (e.g. 0.0.0.0, 127.0.0.1, ::) or localhost');
  return raw;
};

const SIZE_UNITS: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/** Bytes, with an optional k, m or g suffix (powers of 1024): `0`, `65536`, `512k`, `100m`. */
export const size: Parser<number> = (raw, { fail }) => {
  const match = /^(\d{1,9})([kmg]?)$/i.exec(raw);
  if (!match) return fail('a size in bytes, optionally with k, m or g (e.g. 0 = never, 512k, 100m)');
  return Number(match[1]) * SIZE_UNITS[match[2].toLowerCase()];
};

/** A path, relative to the working directory; empty means none. */
export const optionalPath: Parser<string | undefined> = (raw, { cwd }) => (raw === '' ? undefined : resolve(cwd, raw));

/** Where a file will be written later (the pid file): its directory must exist and be writable now; empty means none. */
export const pidFilePath: Parser<string | undefined> = (raw, { cwd, fail }) => {
  if (raw === '') return undefined;
  const path = resolve(cwd, raw);
  try {
    accessSync(dirname(path), constants.W_OK);
  } catch (err) {
    fail(`a file in a writable directory (${(err as Error).message})`);
  }
  return path;
};

/** A PEM file (certificate chain or private key), read now so a bad path stops start-up; empty means none. */
export function pemFile(holding: string): Parser<string | undefined> {
  return (raw, { cwd, fail }) => {
    if (raw === '') return undefined;
    const path = resolve(cwd, raw);
    let text: string;
    try {
      text = readFileSync(path, 'latin1');
    } catch (err) {
      return fail(`a readable PEM file holding ${holding} (${(err as Error).message})`);
    }
    if (!text.includes('-----BEGIN ')) fail(`a PEM file holding ${holding} (${path} has no -----BEGIN line)`);
    return path;
  };
}

/** The www root: a directory holding public/ and controllers/. */
export const wwwDirectory: Parser<string> = (raw, { cwd, fail }) => {
  const www = resolve(cwd, raw);
  for (const sub of ['public', 'controllers']) {
    const dir = join(www, sub);
    let isDirectory: boolean;
    try {
      isDirectory = statSync(dir).isDirectory();
    } catch {
      isDirectory = false;
    }
    if (!isDirectory) fail(`a directory holding public/ and controllers/ (${dir} is missing)`);
  }
  return www;
};

/** `--logs -`: access.log lines on stdout, error.log and host.log lines on stderr (common/lineLog.ts). */
export const STANDARD_STREAMS = '-';

/** The log directory, created when missing; it must be writable. `-` is the process's standard streams. */
export const logDirectory: Parser<string> = (raw, { cwd, fail }) => {
  if (raw === STANDARD_STREAMS) return raw;
  const logs = resolve(cwd, raw);
  try {
    mkdirSync(logs, { recursive: true });
    accessSync(logs, constants.W_OK);
  } catch (err) {
    fail(`a writable directory (${(err as Error).message})`);
  }
  return logs;
};

const UPSTREAM_ALLOWED = 'unix:/path/to/socket, http://<host>:<port> or https://<host>:<port>';

function parseUpstream(raw: string, cwd: string): Upstream | undefined {
  if (raw.startsWith('unix:') && raw.length > 'unix:'.length) {
    return { kind: 'unix', path: resolve(cwd, raw.slice('unix:'.length)) };
  }
  // A host name, an IPv4 address or a bracketed IPv6 address; nothing after the port but an optional '/'.
  const match = /^(https?):\/\/([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})\/?$/.exec(raw);
  const host = match?.[2].replace(/^\[|\]$/g, '');
  const portNumber = Number(match?.[3]);
  if (match && host && (!match[2].startsWith('[') || isIP(host) === 6) && portNumber > 0 && portNumber <= 65535) {
    return match[1] === 'https' ? { kind: 'tcp', host, port: portNumber, tls: true } : { kind: 'tcp', host, port: portNumber };
  }
  return undefined;
}

export function formatUpstream(upstream: Upstream): string {
  if (upstream.kind === 'unix') return `unix:${upstream.path}`;
  return `${upstream.tls ? 'https' : 'http'}://${upstream.host.includes(':') ? `[${upstream.host}]` : upstream.host}:${upstream.port}`;
}

/** An upstream's `upstream` label in /metrics: the same across restarts, so each start continues the same series. */
export function upstreamLabel(upstream: Upstream): string {
  return upstream.label ?? formatUpstream(upstream);
}

/** Upstreams, comma-separated (a repeated flag's values are joined with commas), each given once. */
export const upstreamList: Parser<readonly Upstream[]> = (raw, { cwd, fail }) => {
  const items = raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  const upstreams = items.map((item) => parseUpstream(item, cwd) ?? fail(UPSTREAM_ALLOWED));
  const names = upstreams.map(formatUpstream);
  const repeated = names.find((name, i) => names.indexOf(name) !== i);
  if (repeated !== undefined) fail(`${UPSTREAM_ALLOWED}, each given once (${repeated} is given twice)`);
  return upstreams;
};

/** A comma-separated list of addresses and CIDR subnets: `127.0.0.0/8,::1,10.1.0.0/16`. */
export const allowList: Parser<readonly AllowedClient[]> = (raw, { fail }) =>
  raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
    .map((item): AllowedClient => {
      const [ip, prefix, extra] = item.split('/');
      const family = isIP(ip) === 4 ? 'ipv4' : isIP(ip) === 6 ? 'ipv6' : undefined;
      const bits = family === 'ipv4' ? 32 : 128;
      if (!family || extra !== undefined || (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits))) {
        return fail(
          'a comma-separated list of IP addresses or CIDR subnets (e.g. 127.0.0.0/8,::1,10.1.0.0/16); ' +
            `${JSON.stringify(item)} is not one`,
        );
      }
      return { address: ip, prefix: prefix === undefined ? bits : Number(prefix), family };
    });

export function formatAllowList(list: readonly AllowedClient[]): string {
  return list.map(({ address: ip, prefix }) => `${ip}/${prefix}`).join(',');
}

/**
 * --log-format: `combined`, `json`, or an Apache LogFormat string for access.log (it holds a `%`), checked by
 * compiling it now so an unknown directive stops start-up.
 */
export function logFormat(choices: readonly string[], compile: (format: string) => unknown): Parser<string> {
  return (raw, { fail }) => {
    if (choices.includes(raw)) return raw;
    if (!raw.includes('%')) return fail(`one of ${choices.join(', ')}, or an Apache LogFormat string (e.g. "%h %t \\"%r\\" %>s %D")`);
    try {
      compile(raw);
    } catch (err) {
      fail(`one of ${choices.join(', ')}, or an Apache LogFormat string: ${(err as Error).message}`);
    }
    return raw;
  };
}

/** A page of the operator's own for one status (Apache ErrorDocument), read when the settings are read. */
export interface ErrorDocument {
  status: number;
  file: string;
  contentType: string;
  /** The file's bytes, base64: settings cross to the proxy's processes as JSON. */
  body: string;
}

/**
 * `CODE=FILE` items, comma-separated (a repeated flag's values are joined with commas), each status once. Each
 * file is read now, so a missing one stops start-up (and a SIGHUP keeps the running pages) naming it.
 */
export function errorDocuments(statuses: readonly number[]): Parser<readonly ErrorDocument[]> {
  const allowed = `CODE=FILE items separated by commas, CODE one of ${statuses.join(', ')}`;
  return (raw, { cwd, fail }) => {
    const items = raw
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '');
    const documents = items.map((item): ErrorDocument => {
      const match = /^(\d{3})=(.+)$/.exec(item);
      if (!match || !statuses.includes(Number(match[1]))) return fail(`${allowed} (${JSON.stringify(item)} is not one)`);
      const file = resolve(cwd, match[2]);
      let body: Buffer;
      try {
        body = readFileSync(file);
      } catch (err) {
        return fail(`${allowed}, each FILE readable (${(err as Error).message})`);
      }
      return {
        status: Number(match[1]),
        file,
        contentType: /\.html?$/i.test(file) ? 'text/html; charset=utf-8' : 'text/plain; charset=utf-8',
        body: body.toString('base64'),
      };
    });
    const repeated = documents.find((doc, i) => documents.findIndex((other) => other.status === doc.status) !== i);
    if (repeated) fail(`${allowed}, each CODE once (${repeated.status} is given twice)`);
    return documents;
  };
}
