// One forwarded request's life, the same whichever engine moves its bytes: the upstream it goes to and the
// next one when that cannot be reached, the deadline for the host's head, abandoning it when the client leaves
// or the server answers it itself, its body counted against LimitRequestBody, the host's signals in its answer
// head, and the %b count of a streamed answer. An engine (forwardUndici.ts, forwardHttpProxy.ts) only sends,
// aborts and relays bytes.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { failures, isConnectError, type Failures, type ForwarderOptions } from './forwarding.ts';
import type { RequestContext } from './requestContext.ts';
import type { UpstreamState } from './upstreams.ts';

/** What an engine does for the core. */
export interface EngineRequest {
  /** Sends the request to this upstream (again, after a connect failure). */
  send(upstream: UpstreamState): void;
  /** Stops the host's request; whatever it answers is ignored. */
  abort(reason: string): void;
}

/**
 * The request body as it goes to the host, counted against LimitRequestBody (a declared length past it was
 * refused before forwarding: passes/bodyLimits.ts). Past the limit it stops and `tooLarge` is called once. A body
 * still arriving when the answer has gone (a controller that ignored it) is read and dropped, as Node does
 * for a body nobody read, and as Apache and nginx discard one: the client is not left stalled until its
 * connection times out. The count goes on meanwhile.
 */
function limitedBody(req: IncomingMessage, res: ServerResponse, limit: number, tooLarge: (received: number) => void): Readable {
  let received = 0;
  const body = new PassThrough();
  req.on('data', function count(chunk: Buffer) {
    received += chunk.length;
    if (limit > 0 && received > limit) {
      req.off('data', count);
      req.unpipe(body);
      tooLarge(received);
    }
  });
  res.once('finish', () => {
    if (req.complete) return;
    req.unpipe(body);
    req.resume();
  });
  return req.pipe(body);
}

/** What every forwarded request shares: the engine's options and the answers to each failure. */
export interface ForwardingShared extends ForwarderOptions {
  fail: Failures;
}

export const forwardingShared = (options: ForwarderOptions): ForwardingShared => ({ ...options, fail: failures(options) });

export class ForwardedRequest {
  /** Answered by the proxy itself (504, a refused body, a host error page) or nobody left: the host's answer is dropped. */
  settled = false;
  /** The upstream it was sent to last. */
  upstream!: UpstreamState;
  /** Upstreams that could not be reached for it. */
  private tried: Set<UpstreamState> | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private countBytes = false;
  private engine!: EngineRequest;
  /** Whether another upstream may be tried when one cannot be reached. */
  private readonly retryable: boolean;
  /** The target's path, without its query: what the log lines name. */
  readonly path: string;

  constructor(
    readonly ctx: RequestContext,
    /** The target as it goes to the host. */
    readonly url: string,
    private readonly shared: ForwardingShared,
  ) {
    this.path = url.split('?', 1)[0];
    // nginx's proxy_next_upstream for idempotent methods: only a request without a body, so nothing was consumed.
    this.retryable = (ctx.req.method === 'GET' || ctx.req.method === 'HEAD') && !ctx.withBody;
  }

  /**
   * The request body as it goes to the host, counted against LimitRequestBody (null without one): past it
   * the host's request is abandoned and the client answered 413. Its own stream, not `req`: an engine
   * destroys a body it could not send, and destroying `req` would reset the client's connection.
   */
  body(): Readable | null {
    if (!this.ctx.withBody) return null;
    return limitedBody(this.ctx.req, this.ctx.res, this.shared.limitRequestBody, (received) => {
      this.abandon('request body over LimitRequestBody');
      this.shared.fail.tooLarge(this.ctx, received);
    });
  }

  /** Sends it through `engine`; returns how the server stops it (its body failed mid-way). */
  start(engine: EngineRequest): () => void {
    this.engine = engine;
    const { req, res } = this.ctx;
    res.once('close', () => {
      if (!res.writableFinished) this.abandon('client closed the request');
    });
    const { upstreamTimeoutMs } = this.shared;
    if (upstreamTimeoutMs > 0) {
      // The wait for the host's answer starts once the client's whole body has arrived: an upload's time is not
      // the controller's (as PHP's max_execution_time does not count it).
      const startDeadline = () => {
        if (!this.settled && !res.writableEnded) this.deadline = setTimeout(() => this.timeout(), upstreamTimeoutMs);
      };
      if (req.complete || !this.ctx.withBody) startDeadline();
      else req.once('end', startDeadline);
    }
    this.sendTo(this.shared.upstreams.pick()!);
    return () => this.abandon('request body malformed');
  }

  private sendTo(upstream: UpstreamState): void {
    this.upstream = upstream;
    upstream.requests += 1;
    this.engine.send(upstream);
  }

  /** The client went away, the deadline passed or the server answers it itself: the host's work stops (its signal fires). */
  abandon(reason: string): void {
    this.settled = true;
    clearTimeout(this.deadline);
    this.engine.abort(reason);
  }

  private timeout(): void {
    if (this.settled || this.ctx.res.headersSent) return;
    this.shared.fail.timedOut(this.ctx, this.path);
    this.abandon('no response headers in time');
  }

  /**
   * The host's answer head. True when the engine is to relay it; false when the proxy answered instead
   * (a host error, a failed controller, a full pool, an application that ended without headers: the
   * engine drops the host's body so the connection serves the next request) or had already.
   */
  answerHead(statusCode: number, headers: Record<string, string | string[] | undefined>): boolean {
    clearTimeout(this.deadline);
    const { upstreams, fail } = this.shared;
    upstreams.reached(this.upstream);
    if (this.settled) return false;
    const answer = fail.hostSignals(statusCode, headers, this.ctx);
    if (answer === 'relay') {
      this.countBytes = headers['content-length'] === undefined;
      return true;
    }
    this.settled = true;
    if (answer === 'host-error') fail.hostRefused(statusCode, this.ctx, this.path);
    else if (answer === 'controller-failed') fail.controllerFailed(this.ctx);
    else if (answer === 'pool-full') fail.poolFull(this.ctx, this.path);
    else fail.endedWithoutHeaders(this.ctx, this.path);
    return false;
  }

  /** A chunk of a relayed answer passes on its way to the client: %b of an answer without Content-Length. */
  passed(bytes: number): void {
    if (this.countBytes) this.ctx.streamedBytes += bytes;
  }

  /** The host's answer ended, with these trailers: true when the client's answer was cut instead of ended. */
  answerEnded(trailers: Record<string, string | string[] | undefined>): boolean {
    return this.shared.fail.trailers(trailers, this.ctx);
  }

  /** Sending failed, or the host's connection did before its head: another upstream is tried, or the client gets the page. */
  failed(err: NodeJS.ErrnoException): void {
    if (this.settled) return;
    const { upstreams, fail } = this.shared;
    if (isConnectError(err)) {
      upstreams.connectFailed(this.upstream);
      const { req, res } = this.ctx;
      // Nothing reached the host: a request without a body may go again (an ended request stream pipes into
      // the next upstream request as an immediate end).
      const next =
        this.retryable && !res.headersSent && !req.socket?.destroyed
          ? upstreams.pick((this.tried ??= new Set()).add(this.upstream))
          : undefined;
      if (next) {
        fail.connectFailed(err, this.ctx, this.path, this.upstream);
        return this.sendTo(next);
      }
    } else {
      upstreams.reached(this.upstream);
    }
    clearTimeout(this.deadline);
    this.settled = true;
    fail.failed(err, this.ctx, this.path, this.upstream);
  }

  /** The host's answer broke off after its head: the client's answer is cut, and logged once. */
  cutShort(err: NodeJS.ErrnoException): void {
    this.shared.fail.cutShort(err, this.ctx, this.path, this.upstream);
  }
}
