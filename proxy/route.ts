// What the proxy does with a request, decided from its target alone (no I/O).

export const FORWARD_PREFIX = '/External/';

export type ProxyRoute =
  | { kind: 'forward'; url: string; path: string }
  | { kind: 'static'; path: string }
  | { kind: 'bad-request' };

/**
 * RFC 3986 §5.2.4 remove_dot_segments on the raw path, so `/External/../favicon.ico` is the favicon and
 * `/a/./b` is `/a/b`, as Apache normalises before it maps a URL. Escapes are left alone: the static
 * handler decodes and rejects `..` itself, the host accepts only identifiers.
 */
export function removeDotSegments(path: string): string {
  if (!path.includes('/.')) return path;
  const out: string[] = [];
  const segments = path.split('/');
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i];
    const last = i === segments.length - 1;
    if (segment === '.' || segment === '..') {
      if (segment === '..') out.pop();
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
  const path = removeDotSegments(rawPath);
  if (path.startsWith(FORWARD_PREFIX)) {
    return { kind: 'forward', path, url: path === rawPath ? target : path + (q === -1 ? '' : target.slice(q)) };
  }
  return { kind: 'static', path };
}
