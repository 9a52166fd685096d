// What the proxy does with a request, decided from its target alone (no I/O).
import { CONTROLLER_PREFIX } from '../common/protocol.ts';

/** Apache mod_status's usual Location. */
const SERVER_STATUS = '/server-status';

export type ProxyRoute =
  | { kind: 'forward'; url: string; path: string }
  | { kind: 'static'; path: string }
  /** /server-status, with its query (`auto`, `json`, `refresh=N`). */
  | { kind: 'status'; query: string }
  | { kind: 'bad-request' };

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
  // Only origin-form targets (`/path?query`); absolute-form and `*` are not for this server.
  if (!target.startsWith('/')) return { kind: 'bad-request' };
  const q = target.indexOf('?');
  const rawPath = q === -1 ? target : target.slice(0, q);
  const path = normalizePath(rawPath);
  if (path === undefined) return { kind: 'bad-request' };
  if (path === SERVER_STATUS) return { kind: 'status', query: q === -1 ? '' : target.slice(q + 1) };
  if (path.startsWith(CONTROLLER_PREFIX)) {
    return { kind: 'forward', path, url: path === rawPath ? target : path + (q === -1 ? '' : target.slice(q)) };
  }
  return { kind: 'static', path };
}
