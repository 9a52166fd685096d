// What the proxy asks of a request about how it came: over HTTP/2 (node:http2's compatibility request,
// which the handler takes as an IncomingMessage) or HTTP/1.x, and over TLS or not.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

/** HTTP/2 here is only ever over TLS (no h2c). llhttp also parses an `HTTP/2.0` request line, so the version alone says nothing. */
export function isHttp2(req: IncomingMessage): boolean {
  return 'stream' in req;
}

/**
 * Whether a body follows the head. HTTP/2 needs no Content-Length for one: the HEADERS frame that does not
 * end the stream says so. (An unread compatibility request never becomes `complete`, GET or not.)
 */
export function bodyFollows(req: IncomingMessage): boolean {
  if (isHttp2(req)) return !(req as unknown as Http2ServerRequest).stream.endAfterHeaders;
  return req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
}

/**
 * Whether nothing more can be written to the response: ended, destroyed, or, on HTTP/2, its stream closed
 * (a compatibility response is neither ended nor destroyed when its stream is reset under it).
 */
export function responseGone(res: ServerResponse): boolean {
  if (res.destroyed || res.writableEnded) return true;
  return isHttp2(res.req) && (res as unknown as Http2ServerResponse).stream.closed;
}

export function schemeOf(req: IncomingMessage): 'http' | 'https' {
  return isHttp2(req) || (req.socket as TLSSocket | null)?.encrypted === true ? 'https' : 'http';
}

/** The authority the client named: Host, or `:authority` on HTTP/2 (RFC 9113 §8.3.1). */
export function authorityOf(req: IncomingMessage): string | undefined {
  return req.headers.host ?? (req.headers[':authority'] as string | undefined);
}

/** The response node:http is writing on an HTTP/1.x connection, if any (its own field; none when idle). */
export function answeringOn(socket: Socket): unknown {
  return (socket as Socket & { _httpMessage?: unknown })._httpMessage;
}

/**
 * Whether the answer was aborted before it completed (Apache's %X `X`): not finished, or, on HTTP/2, its stream
 * reset by the client; node:http2 then ends the stream's writable side itself, so it looks finished.
 */
export function answerAborted(res: ServerResponse): boolean {
  if (!res.writableFinished) return true;
  return isHttp2(res.req) && (res as unknown as Http2ServerResponse).stream.aborted;
}
