// What the proxy asks of a request about how it came: over HTTP/2 (node:http2's compatibility request,
// which the handler takes as an IncomingMessage) or HTTP/1.x, and over TLS or not.
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

/** HTTP/2 here is only ever over TLS (no h2c). llhttp also parses an `HTTP/2.0` request line, so the version alone says nothing. */
export function isHttp2(req: IncomingMessage): boolean {
  return 'stream' in req;
}

export function schemeOf(req: IncomingMessage): 'http' | 'https' {
  return isHttp2(req) || (req.socket as TLSSocket | null)?.encrypted === true ? 'https' : 'http';
}

/** The authority the client named: Host, or `:authority` on HTTP/2 (RFC 9113 §8.3.1). */
export function authorityOf(req: IncomingMessage): string | undefined {
  return req.headers.host ?? (req.headers[':authority'] as string | undefined);
}
