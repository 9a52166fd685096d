// A request's body as the server watches it while the passes answer: read on and dropped after an early
// answer (lingeringClose.ts), logged when it breaks off unanswered, and answered when the parser fails
// inside it. Per request on its context; per HTTP/1.1 connection here, as the parser reports per socket.
import type { Http2ServerResponse } from 'node:http2';
import type { Socket } from 'node:net';
import { statusOfParserError } from '../../common/protocol.ts';
import { closeAtOnce, lingerAfterEarlyAnswer } from './lingeringClose.ts';
import { answeringOn, isHttp2 } from '../core/protocols.ts';
import type { RequestContext } from '../core/requestContext.ts';

/** The last request with a body on each HTTP/1.1 connection: a parser error while it is incomplete is in its body. */
const readingBody = new WeakMap<Socket, RequestContext>();
/** Connections whose request's body failed and was logged and answered (refuseBody). */
const refusedSockets = new WeakSet<Socket>();

/** Called once for each request, before any pass answers it. */
export function watchBody(ctx: RequestContext): void {
  if (!ctx.withBody) return;
  const { req, res } = ctx;
  lingerAfterEarlyAnswer(req, res);
  // An HTTP/2 request is `complete` once its stream closes, however it closed: its end is watched instead.
  req.once('end', () => (ctx.bodyEnded = true));
  if (!isHttp2(req)) readingBody.set(req.socket, ctx);
}

/**
 * At the response's close: a request whose body did not arrive whole and that got no answer (a client
 * that left mid-body, an HTTP/2 stream reset, a body shorter than its length) is logged 400, as Apache logs
 * a body it failed to read, never the 200 a response starts with.
 */
export function noteBrokenBody(ctx: RequestContext): void {
  const { req, res } = ctx;
  if (!ctx.withBody || res.headersSent || ctx.bodyRefused || (isHttp2(req) ? ctx.bodyEnded : req.complete)) return;
  res.statusCode = 400;
  const stream = isHttp2(req) ? (res as unknown as Http2ServerResponse).stream : undefined;
  ctx.log(
    'core',
    'info',
    `Request body incomplete: ${stream ? `the stream was reset (RST_STREAM ${stream.rstCode ?? '-'})` : 'the connection closed'} before it ended`,
  );
}

/** The request on `socket` whose body the parser is still reading, if any. */
export function bodyBeingRead(socket: Socket): RequestContext | undefined {
  const ctx = readingBody.get(socket);
  return ctx && !ctx.req.complete && !ctx.res.writableEnded ? ctx : undefined;
}

/** Whether the request on `socket` had its body refused already (its parser error is answered). */
export const bodyRefusedOn = (socket: Socket): boolean => refusedSockets.has(socket);

/**
 * The parser failed inside a request's body (a chunk line without CR, a trailer with Content-Length, a
 * body past --request-timeout; not the connection ending, a client that left): that request gets the
 * status, as Apache answers a body it cannot read (400, or 408), and the connection closes. Its forwarding
 * stops. The page goes out when this request is the one being answered and nothing of its answer has;
 * otherwise the connection is cut, and its access line still has the status.
 */
export function refuseBody(ctx: RequestContext, err: NodeJS.ErrnoException, socket: Socket): void {
  const { res } = ctx;
  ctx.log('core', 'info', `Bad request: ${err.code ?? ''} ${err.message}`);
  ctx.bodyRefused = true;
  refusedSockets.add(socket);
  closeAtOnce(socket); // a body the parser failed in, or too slow: not read on after the answer
  ctx.abandonForward?.();
  const status = statusOfParserError(err.code);
  if (res.headersSent) return void socket.destroy();
  if (answeringOn(socket) !== res || !socket.writable) {
    res.statusCode = status;
    return void socket.destroy();
  }
  res.shouldKeepAlive = false;
  ctx.sendErrorPage(status);
}
