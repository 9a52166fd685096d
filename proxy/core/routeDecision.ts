// What the proxy does with a request, decided from its target alone (no I/O).
import { namesPossibleController } from '../../common/controllerName.ts';
import { CONTROLLER_PREFIX } from '../../common/protocol.ts';

/** Apache mod_status's usual Location. */
const SERVER_STATUS = '/server-status';
/** Where Prometheus looks by default (its scrape config's metrics_path). */
const METRICS = '/metrics';
/** Prometheus's own probe paths: a prefix no site's file is likely to use. */
const PROBES: Record<string, 'live' | 'ready'> = { '/-/healthy': 'live', '/-/ready': 'ready' };

/** What the route decided for a request; `refused` is one answered before or instead of routing (400, 413, 505…). */
export const ROUTE_KINDS = ['controller', 'static', 'status', 'metrics', 'refused'] as const;
/** Indices into ROUTE_KINDS, so counting needs no string. */
export const KIND = { controller: 0, static: 1, status: 2, metrics: 3, refused: 4 } as const;
export type RouteKind = (typeof KIND)[keyof typeof KIND];

export type ProxyRoute =
  | { kind: 'forward'; url: string; path: string }
  | { kind: 'static'; path: string }
  /** /server-status, with its query (`auto`, `json`, `refresh=N`). */
  | { kind: 'status'; query: string }
  /** /metrics, Prometheus's text format; the query is ignored. */
  | { kind: 'metrics' }
  /** A prober's question: does this proxy answer (`live`), can a host take a request (`ready`)? */
  | { kind: 'probe'; probe: 'live' | 'ready' }
  /** A path with `%2f` or `%5c`, or a controller's with `%00`: 404 (Apache's AllowEncodedSlashes Off, AH00026). */
  | { kind: 'encoded-slash' }
  /**
   * 400 for a target this server cannot take, 414 for one past Apache's LimitRequestLine; `aboveRoot`
   * when its path climbs above the root (Apache's AH10244).
   */
  | { kind: 'bad-request'; status: 400 | 414; aboveRoot?: true };

/** Apache's LimitRequestLine default (8190 bytes); a longer target is 414 URI Too Long. */
const MAX_TARGET_LENGTH = 8190;

/** A `%` not followed by two hex digits: Apache answers 400, and decoding around it would decode twice (CVE-2021-42013: `.%%32%65`). */
const MALFORMED_ESCAPE = /%(?![0-9A-Fa-f]{2})/;

/**
 * An encoded `/` or `\`: Apache with AllowEncodedSlashes Off (its default) answers 404 for a path holding
 * one (request.c, AH00026); on Windows, where the legacy ran, `\` is a separator too.
 */
const ENCODED_SLASH = /%(?:2[Ff]|5[Cc])/;

/**
 * The same under the controller prefix, and `%00`: Apache's ap_unescape_url() refuses an encoded NUL as it does
 * an encoded slash (404, AH00026), so the legacy never ran a script for either.
 */
const ENCODED_SLASH_OR_NUL = /%(?:2[Ff]|5[Cc]|00)/;

/** The scheme and authority of an absolute-form target (RFC 9112 §3.2.2), which a server MUST accept. */
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;

/** %XX escapes of unreserved characters (RFC 3986 §2.3), which mean the same decoded. */
const UNRESERVED_ESCAPE = /%(2[DdEe]|3[0-9]|[46][1-9A-Fa-f]|[57][0-9Aa]|5[Ff]|7[Ee])/g;

/**
 * The path as Apache 2.4 maps it (ap_normalize_path with MergeSlashes on): unreserved escapes decoded
 * (so `%2e%2e` is `..`, the CVE-2021-41773 lesson), `//` merged, then RFC 3986 §5.2.4 dot segments
 * removed, so `/External/../favicon.ico` is the favicon. A path that climbs above the root is
 * `undefined` (Apache answers 400). Other escapes, `%2f` among them, are left for the handler.
 */
export function normalizePath(path: string): string | undefined {
  let decoded = path.includes('%') ? path.replace(UNRESERVED_ESCAPE, (hex) => String.fromCharCode(parseInt(hex.slice(1), 16))) : path;
  if (decoded.includes('//')) decoded = decoded.replace(/\/{2,}/g, '/');
  if (!decoded.includes('/.')) return decoded;
  const out: string[] = [];
  const segments = decoded.split('/');
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i];
    const last = i === segments.length - 1;
    if (segment === '.' || segment === '..') {
      if (segment === '..' && out.pop() === undefined) return undefined;
      if (last) out.push('');
    } else out.push(segment);
  }
  return '/' + out.join('/');
}

export function routeRequest(target: string): ProxyRoute {
  if (target.length > MAX_TARGET_LENGTH) return { kind: 'bad-request', status: 414 };
  // Absolute-form names this server (there is one site): what follows the authority is the target.
  const authority = ABSOLUTE_FORM.exec(target);
  if (authority) {
    target = target.slice(authority[0].length);
    if (!target.startsWith('/')) target = `/${target}`;
  }
  // Otherwise only origin-form targets (`/path?query`); `*` and other schemes are not for this server.
  if (!target.startsWith('/')) return { kind: 'bad-request', status: 400 };
  const q = target.indexOf('?');
  const rawPath = q === -1 ? target : target.slice(0, q);
  if (MALFORMED_ESCAPE.test(rawPath)) return { kind: 'bad-request', status: 400 };
  const path = normalizePath(rawPath);
  if (path === undefined) return { kind: 'bad-request', status: 400, aboveRoot: true };
  if (path === SERVER_STATUS) return { kind: 'status', query: q === -1 ? '' : target.slice(q + 1) };
  if (path === METRICS) return { kind: 'metrics' };
  if (Object.hasOwn(PROBES, path)) return { kind: 'probe', probe: PROBES[path] };
  if (path.startsWith(CONTROLLER_PREFIX)) {
    if (ENCODED_SLASH_OR_NUL.test(path)) return { kind: 'encoded-slash' };
    // A name no controller file can have is no controller's request, as the legacy's route matched none:
    // a file's path like any other (Apache's 404 and AH00128 when no file is there), never a script's failure.
    if (!namesPossibleController(path)) return { kind: 'static', path };
    return { kind: 'forward', path, url: path === rawPath ? target : path + (q === -1 ? '' : target.slice(q)) };
  }
  // A file's path has Apache's rule for encoded slashes; send refuses a NUL itself (400).
  if (ENCODED_SLASH.test(path)) return { kind: 'encoded-slash' };
  return { kind: 'static', path };
}
