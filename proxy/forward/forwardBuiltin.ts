// The builtin engine: HTTP/1.1 to the host over kept-alive connections of its own, written as one string a
// request and read by hostResponseParser.ts, the answer's bytes handed to the request's answer sink as they come.
// undici does the same with a general client's layers (a Request object, a handler wrapper, a parsed copy of the
// head); this does only what the host's answers need, and costs the proxy about 6 µs less a relayed request
// (docs/benchmarks.md, Forwarding engine). What a forwarded request goes through besides moving bytes is the
// core's (forwardingCore.ts), as for the other engines.
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { HostTarget } from '../../common/hostTarget.ts';
import {
  forwardedHeaders,
  IDLE_UPSTREAM_SOCKET_MS,
  NODE_FRAMED,
  responseHeaders,
  type ForwarderOptions,
  type Forwarding,
} from './forwarding.ts';
import { ForwardedRequest, forwardingShared, hostLinks, stopFollowing, type EngineRequest } from './forwardingCore.ts';
import { HostResponseParser, type ResponseHandler } from './hostResponseParser.ts';
import { START_BY_FIELD } from '../../common/protocol.ts';

/** Fields this engine frames itself (the body's), or that would make the host answer 100 first. */
const ENGINE_FRAMED = ['transfer-encoding', 'expect', 'content-length'] as const;

/** A byte no request line or field may hold: it would end the line early (request splitting). */
const LINE_BREAKING = /[\0\r\n]/;
/** What a request target may hold on the wire (RFC 9112 §3.2: no space, no control byte). */
const TARGET = /^[\x21-\x7e\x80-\xff]+$/;

/** The request's head, as it goes on the wire; throws on a byte that would break its lines. */
function requestHead(method: string, target: string, fields: Record<string, string | string[]>, framing: string): string {
  if (!TARGET.test(target)) throw new Error('invalid request target');
  // An HTTP/1.0 client may send no Host; the host's node:http refuses an HTTP/1.1 request without one (undici's origin).
  let head = `${method} ${target} HTTP/1.1\r\n${fields.host === undefined ? 'host: localhost\r\n' : ''}`;
  for (const name in fields) {
    const value = fields[name];
    for (const each of typeof value === 'string' ? [value] : value) {
      if (LINE_BREAKING.test(each)) throw new Error(`invalid value of request field ${name}`);
      head += `${name}: ${each}\r\n`;
    }
  }
  return `${head}${framing}\r\n`;
}

/** One piece of a request body, in a chunk of its own when `chunked`; false when the socket is full. */
function writeBodyPiece(socket: Socket, piece: Buffer, chunked: boolean): boolean {
  if (!chunked) return socket.write(piece);
  if (piece.length === 0) return true; // a chunk of 0 would end the body
  socket.cork();
  socket.write(`${piece.length.toString(16)}\r\n`, 'latin1');
  socket.write(piece);
  const room = socket.write('\r\n', 'latin1');
  socket.uncork();
  return room;
}

/** The wait before connecting again to a socket whose listen queue was full, doubling up to the most. */
const CONNECT_AGAIN_MS = { first: 5, most: 100 } as const;

/**
 * The kept-alive connections to one host process; a connection carries one request at a time. They are not
 * capped: a worker runs any number of calls at once, so a cap here would be a hidden queue where a fast request
 * waits behind slow ones. File descriptors are the bound; when they run out the request gets 503 (forwarding.ts).
 */
class HostConnections {
  private readonly idle: HostConnection[] = [];
  private closed = false;

  constructor(readonly target: HostTarget) {}

  /** Starts `attempt` on a free connection, else on a new one once it connects. */
  assign(attempt: BuiltinAttempt): void {
    for (let connection = this.idle.pop(); connection; connection = this.idle.pop())
      if (connection.usable) return attempt.begin(connection);
    new HostConnection(this, attempt);
  }

  /**
   * A new connection for `attempt` failed before it connected. A unix socket whose listen queue is full refuses
   * at once (EAGAIN) where TCP would retry: nothing of the request was written, so it connects again, as a SYN is
   * sent again, until its client leaves or the core's deadline drops it. Any other failure is the request's.
   */
  connectFailed(attempt: BuiltinAttempt, err: NodeJS.ErrnoException | undefined): void {
    if (attempt.dropped) return;
    if (err?.code !== 'EAGAIN' || this.closed) return attempt.connectionEnded(err);
    const wait = Math.min(CONNECT_AGAIN_MS.first * 2 ** attempt.connectTries++, CONNECT_AGAIN_MS.most);
    setTimeout(() => {
      if (!attempt.dropped) this.assign(attempt);
    }, wait);
  }

  /** A connection whose request has ended, whole both ways: kept for the next, unless retired. */
  release(connection: HostConnection): void {
    if (this.closed) return connection.destroy();
    this.idle.push(connection);
  }

  /** A connection that closed (the host, an idle timeout, a failure). */
  gone(connection: HostConnection): void {
    const at = this.idle.indexOf(connection);
    if (at !== -1) this.idle.splice(at, 1);
  }

  /** No new request; idle connections close now, busy ones when their request ends. */
  close(): void {
    this.closed = true;
    for (const connection of this.idle.splice(0)) connection.destroy();
  }
}

/** One connection to a host process. */
class HostConnection {
  private readonly socket: Socket;
  private attempt: BuiltinAttempt | undefined;
  /** The attempt it was opened for, until it connects: nothing is written before, so a refused connect loses nothing. */
  private opening: BuiltinAttempt | undefined;
  private gone = false;

  constructor(
    private readonly connections: HostConnections,
    first: BuiltinAttempt,
  ) {
    this.opening = first;
    const connected = () => {
      const attempt = this.opening;
      this.opening = undefined;
      if (attempt && !attempt.dropped) attempt.begin(this);
      else this.connections.release(this);
    };
    this.socket = connections.target.connect(connected);
    this.socket.setNoDelay(true);
    // Idle this long, it is closed: the host keeps its side longer (host/worker/app.ts) and never closes one while retiring.
    this.socket.setTimeout(IDLE_UPSTREAM_SOCKET_MS, () => {
      if (!this.attempt) this.destroy();
    });
    // Bytes while no request is on it are nothing the host may send: the connection is not kept.
    this.socket.on('data', (chunk: Buffer) => (this.attempt ? this.attempt.received(chunk) : this.destroy()));
    // The host's end: the connection takes no other request (Node would refuse to write on it), its request reads on.
    this.socket.on('end', () => this.ended());
    this.socket.on('error', (err) => this.ended(err));
    this.socket.on('close', () => this.ended());
  }

  /** Whether it may take a request: open, and nothing on it. */
  get usable(): boolean {
    return !this.gone && !this.attempt && !this.socket.destroyed;
  }

  get writable(): Socket {
    return this.socket;
  }

  carry(attempt: BuiltinAttempt): void {
    this.attempt = attempt;
  }

  /** The attempt's request and answer ended whole: the connection serves another, unless the host said close. */
  finished(keepAlive: boolean): void {
    this.attempt = undefined;
    if (!keepAlive || this.gone) return this.destroy();
    // Paused for a client that was slow to read it (an answer whose last bytes came with the pause): the next
    // request's answer must flow.
    this.socket.resume();
    this.connections.release(this);
  }

  destroy(): void {
    this.attempt = undefined;
    this.socket.destroy();
  }

  /** Closes it if it still carries `attempt` (once its answer ended, it may carry the next request already). */
  destroyFor(attempt: BuiltinAttempt): void {
    if (this.attempt === attempt) this.destroy();
  }

  /** Stops reading for `attempt` while its client's socket is full. */
  pauseFor(attempt: BuiltinAttempt): void {
    if (this.attempt === attempt) this.socket.pause();
  }

  /** Reads on for `attempt`, unless the connection has gone on to another request meanwhile. */
  resumeFor(attempt: BuiltinAttempt): void {
    if (this.attempt === attempt) this.socket.resume();
  }

  private ended(err?: NodeJS.ErrnoException): void {
    if (this.gone) return;
    this.gone = true;
    this.connections.gone(this);
    const opening = this.opening;
    this.opening = undefined;
    if (opening) return this.connections.connectFailed(opening, err);
    // Every byte the host sent has been read ('end' comes after the last 'data'): its request ends with this.
    const attempt = this.attempt;
    this.attempt = undefined;
    attempt?.connectionEnded(err);
  }
}

/** One forwarded request; each send is an attempt of its own. */
class BuiltinRequest implements EngineRequest {
  private attempt: BuiltinAttempt | undefined;

  constructor(
    private readonly forwarded: ForwardedRequest,
    private readonly connectionsFor: (target: HostTarget) => HostConnections,
    private readonly request: RequestOut,
  ) {}

  send(target: HostTarget, startBy?: number): void {
    const connections = this.connectionsFor(target);
    // The head ends with its blank line: the stamp goes just before it.
    const { head } = this.request;
    const request =
      startBy === undefined ? this.request : { ...this.request, head: `${head.slice(0, -2)}${START_BY_FIELD}: ${startBy}\r\n\r\n` };
    this.attempt = new BuiltinAttempt(this.forwarded, request);
    connections.assign(this.attempt);
  }

  abort(): void {
    this.attempt?.drop();
  }
}

/** What goes to the host: the head as written, and the body (chunked when it declared no length). */
interface RequestOut {
  head: string;
  body: Readable | null;
  declaredLength: number | undefined;
}

/** One send of a forwarded request on one connection: the host's answer goes to the request's answer sink as it comes. */
class BuiltinAttempt implements ResponseHandler {
  private readonly parser: HostResponseParser;
  private connection: HostConnection | undefined;
  /** Set once it is aborted: nothing it hears from then on reaches the request (it may have been sent again). */
  dropped = false;
  /** Connects refused so far because the host's listen queue was full. */
  connectTries = 0;
  /** The proxy answered instead: the host's body is read and dropped, so the connection serves the next request. */
  private discarding = false;
  /** Its connection is paused until the client's socket drains. */
  private waitingForClient = false;
  private bodySent = true;
  private over = false;
  /** Its answer ended at its framing (not broken off). */
  private endedWhole = false;
  /** While the parser reads a chunk; and whether the connection is to be reused once it has read all of it. */
  private feeding = false;
  private reuseAfterFeed: boolean | undefined;

  constructor(
    private readonly forwarded: ForwardedRequest,
    private readonly request: RequestOut,
  ) {
    this.parser = new HostResponseParser(this, forwarded.ctx.req.method === 'HEAD');
  }

  /** Writes the head, then the body on `connection`: chunked when it declared no length, else exactly that long. */
  begin(connection: HostConnection): void {
    this.connection = connection;
    connection.carry(this);
    const { head, body, declaredLength } = this.request;
    const socket = connection.writable;
    if (!body) return void socket.write(head, 'latin1');
    const chunked = declaredLength === undefined;
    this.bodySent = false;
    socket.write(head, 'latin1');
    // A declared length is the body's: node:http's parser frames an HTTP/1.1 body by it, and nghttp2 resets an
    // HTTP/2 stream whose DATA differs from it, which ends this request (and its host connection) as a client's abort.
    const resume = () => body.resume();
    body.on('data', (chunk: Buffer) => {
      if (this.over) return;
      if (writeBodyPiece(socket, chunk, chunked)) return;
      body.pause();
      socket.once('drain', resume);
    });
    body.once('end', () => {
      if (this.over) return;
      if (chunked) socket.write('0\r\n\r\n');
      this.bodySent = true;
    });
  }

  received(chunk: Buffer): void {
    this.feeding = true;
    try {
      this.parser.feed(chunk);
    } catch (err) {
      // What the host sent is no HTTP/1.1 answer, or the client's response refused it (a field value Node will not
      // write): the connection is not read on, and the request fails, or is cut once its head has gone. Bytes
      // past an answer that ended belong to no request: its client has its answer, and the connection closes.
      this.feeding = false;
      this.reuseAfterFeed = undefined;
      this.connection!.destroyFor(this);
      if (this.endedWhole) return this.forwarded.pastEnd();
      return this.broke(err as NodeJS.ErrnoException);
    }
    this.feeding = false;
    // The answer ended in this chunk with no byte after it: only now may its connection carry another request.
    if (this.reuseAfterFeed !== undefined) this.connection!.finished(this.reuseAfterFeed);
    this.reuseAfterFeed = undefined;
  }

  drop(): void {
    if (this.dropped) return;
    this.dropped = true;
    this.stopBody();
    if (this.connection && !this.over) this.connection.destroy();
  }

  head(status: number, fields: Record<string, string | string[]>): void {
    if (this.dropped || this.forwarded.settled) {
      this.over = true;
      this.stopBody();
      return this.connection!.destroy();
    }
    if (!this.forwarded.answerHead(status, fields)) {
      this.discarding = true;
      return;
    }
    this.forwarded.ctx.answer.head(status, responseHeaders(fields, NODE_FRAMED));
  }

  body(chunk: Buffer): void {
    if (this.dropped || this.discarding || this.forwarded.settled) return;
    this.forwarded.passed(chunk.length);
    const { answer } = this.forwarded.ctx;
    // What came with the read that filled the client's socket is written too; one wait for its drain is enough.
    if (answer.write(chunk) || this.waitingForClient) return;
    this.waitingForClient = true;
    this.connection!.pauseFor(this);
    answer.onDrain(() => {
      this.waitingForClient = false;
      this.connection!.resumeFor(this);
    });
  }

  end(trailers: Record<string, string | string[]>): void {
    this.over = true;
    this.endedWhole = true;
    // An answer that came before the whole body went leaves a connection that cannot carry another request.
    const reusable = this.bodySent && this.parser.keepAlive;
    this.stopBody();
    // Within a chunk, the rest of it is read first: a byte past the answer's end closes the connection instead.
    if (this.feeding) this.reuseAfterFeed = reusable;
    else this.connection!.finished(reusable);
    if (this.dropped || this.discarding || this.forwarded.settled) return;
    if (!this.forwarded.answerEnded(trailers)) this.forwarded.ctx.answer.end();
  }

  /** The connection closed or failed while it carried this attempt. */
  connectionEnded(err?: NodeJS.ErrnoException): void {
    if (this.over) return;
    if (this.parser.close()) return; // a body read to the connection's end, now ended
    this.broke(err ?? Object.assign(new Error('other side closed'), { code: 'ECONNRESET' }));
  }

  /** Ends it with `err`: the request fails, or its answer is cut once its head has gone to the client. */
  private broke(err: NodeJS.ErrnoException): void {
    this.over = true;
    this.stopBody();
    if (this.dropped || this.discarding) return;
    if (this.forwarded.ctx.res.headersSent) this.forwarded.cutShort(err);
    else this.forwarded.failed(err);
  }

  private stopBody(): void {
    const { body } = this.request;
    if (!body || this.bodySent) return;
    this.bodySent = true;
    body.removeAllListeners('data');
    // A body nobody reads any more is dropped as it comes: the client is not left stalled (forwardingCore.ts).
    body.resume();
  }
}

export function createBuiltinForwarder(options: ForwarderOptions): Forwarding {
  const hosts = hostLinks(
    (target) => new HostConnections(target),
    (connections) => connections.close(),
  );
  const shared = forwardingShared(options, (worker) => hosts.left(worker.target));

  return {
    forward(ctx, url) {
      const forwarded = new ForwardedRequest(ctx, url, shared);
      const fields = forwardedHeaders(ctx, ENGINE_FRAMED, options.markLocalClients);
      const body = forwarded.body();
      const declared = ctx.req.headers['content-length'];
      // A body of a declared length goes as it is (a POST's `Content-Length: 0` too); one without (chunked, or HTTP/2's)
      // is chunked to the host.
      const declaredLength = declared === undefined ? undefined : Number(declared);
      const framing = declaredLength !== undefined ? `content-length: ${declaredLength}\r\n` : body ? 'transfer-encoding: chunked\r\n' : '';
      let head: string;
      try {
        head = requestHead(ctx.req.method ?? 'GET', url, fields, framing);
      } catch (err) {
        const failing: EngineRequest = { send: () => forwarded.failed(err as NodeJS.ErrnoException), abort: () => undefined };
        return forwarded.start(failing);
      }
      return forwarded.start(new BuiltinRequest(forwarded, hosts.to, { head, body, declaredLength }));
    },
    retire() {
      stopFollowing(shared);
      hosts.retire();
    },
  };
}
