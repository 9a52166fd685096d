// Lingering close (Apache ap_lingering_close, nginx lingering_close): an answer given before the request's
// body was read is followed by reading and discarding the rest of that body, so a client that writes its
// whole body before it reads (urllib, any client without `Expect: 100-continue`) finishes writing and gets
// the answer, instead of a reset and a broken pipe. Then the connection closes: no keep-alive after it.
// On HTTP/2 only the stream ends, with RST_STREAM NO_ERROR; the session goes on.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants as http2Constants, type Http2ServerResponse } from 'node:http2';
import type { Socket } from 'node:net';
import { isHttp2 } from '../core/protocols.ts';

/** At most this long from the answer's end to the close: nginx lingering_time, Apache MAX_SECS_TO_LINGER. */
export const LINGER_TOTAL_MS = 30_000;
/** At most this long between two reads: nginx lingering_timeout (Apache waits 2 s). */
export const LINGER_IDLE_MS = 5_000;

/** HTTP/1.x connections reading a body nobody wants: whatever the parser finds on them is not served. */
const lingering = new WeakSet<Socket>();
/** Connections to close at once, without reading on (a body the parser refused, or too slow). */
const closingAtOnce = new WeakSet<Socket>();

export const isLingering = (socket: Socket): boolean => lingering.has(socket);

/** The connection's body is not worth waiting for (its parser failed, or its time ran out): no lingering. */
export function closeAtOnce(socket: Socket): void {
  closingAtOnce.add(socket);
}

/**
 * Called once for each request with a body, before anything answers it. While its body is unread the
 * response does not keep the connection alive (Node reads `shouldKeepAlive` when it writes the head, for
 * `Connection: close`); when the response has ended with the body still unread, the rest is read and
 * dropped for at most LINGER_TOTAL_MS, LINGER_IDLE_MS between reads, never buffered nor forwarded; then
 * the connection closes. HTTP/2 has streams for this: see endStreamAfterAnswer().
 */
export function lingerAfterEarlyAnswer(req: IncomingMessage, res: ServerResponse): void {
  if (isHttp2(req)) return endStreamAfterAnswer(req, res);
  if (req.complete) return; // the body came with the head
  let keepAliveWanted = res.shouldKeepAlive;
  // What other code sets (a stop, a refused request, Node itself) is kept, and read back with the body's state.
  Object.defineProperty(res, 'shouldKeepAlive', {
    configurable: true,
    enumerable: true,
    get: () => keepAliveWanted && req.complete,
    set: (value: boolean) => (keepAliveWanted = value),
  });
  // Node ends a connection that is not kept alive with destroySoon() once the response has gone out
  // (_http_server.js resOnFinish): its destroy() would reset a client still sending.
  const socket = req.socket as Socket & { destroySoon: (this: Socket) => void };
  const destroySoon = Reflect.get<Socket, 'destroySoon'>(socket, 'destroySoon'); // net.Socket's own, called on it below
  socket.destroySoon = function lingeringDestroySoon(this: Socket) {
    socket.destroySoon = destroySoon;
    if (req.complete || closingAtOnce.has(socket) || socket.destroyed) return destroySoon.call(this);
    linger(socket, req);
  };
}

function linger(socket: Socket, req: IncomingMessage): void {
  lingering.add(socket);
  const close = () => socket.destroy();
  socket.end(); // FIN after the answer (shutdown(SHUT_WR)); the client reads it once it has written
  socket.setTimeout(LINGER_IDLE_MS, close);
  const deadline = setTimeout(close, LINGER_TOTAL_MS);
  socket.once('close', () => clearTimeout(deadline));
  // Node's parser goes on reading the body into `req`, which drops it (_dump() made it flow).
  req.resume();
  // The whole body is in: nothing left to wait for, and the FIN is out already.
  req.once('end', close);
  req.once('error', close);
}

/**
 * HTTP/2: once the answer has gone out (the stream's writable side finished), a body still arriving is
 * refused with RST_STREAM NO_ERROR, which RFC 9113 §8.1 gives a server that answered before the whole
 * request: the client keeps the answer and stops sending, the DATA frames in flight are dropped by
 * nghttp2, and the session goes on. (Node does this itself for a body nobody began to read; a body
 * forwarded in part would otherwise wait for a reader until the session timed out.)
 */
function endStreamAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  const stream = (res as unknown as Http2ServerResponse).stream;
  stream.once('finish', () => {
    if (req.readableEnded) return;
    // Nothing more goes to the host, and what is buffered or still arriving is dropped: a body left paused
    // (its reader, the engine, has stopped) would keep the stream open, as Node ends a stream only once its
    // body has been consumed, and with it the response's 'close' and its access line.
    req.unpipe();
    req.resume();
    // On the next turn, as Node closes a stream whose body nobody read (core.js callStreamClose): a close
    // within 'finish' itself sends no RST_STREAM.
    setImmediate(() => {
      if (!req.readableEnded && !stream.closed && !stream.destroyed) stream.close(http2Constants.NGHTTP2_NO_ERROR);
    });
  });
}
