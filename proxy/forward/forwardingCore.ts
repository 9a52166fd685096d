// One forwarded request's life, the same whichever engine moves its bytes: the upstream it goes to and the
// next one when that cannot be reached, the deadline for the host's head, abandoning it when the client leaves
// or the server answers it itself, its body counted against LimitRequestBody, the host's signals in its answer
// head, and the %b count of a streamed answer. An engine (forwardBuiltin.ts, forwardHttpProxy.ts) only sends,
// aborts and relays bytes.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { failures, isConnectError, type Failures, type ForwarderOptions } from './forwarding.ts';
import type { InFlightEntry } from './inFlightList.ts';
import { isHttp2 } from '../core/protocols.ts';
import type { RequestContext } from '../core/requestContext.ts';
import type { HostTarget } from '../../common/hostTarget.ts';
import { NOT_STARTED_FIELD } from '../../common/protocol.ts';
import type { UpstreamState } from './upstreams.ts';
import { HostWorkers, type SentRequest, type WorkerTarget } from './workerRoutes.ts';
import { sendAgainAfterLoss } from '../../common/workerLoss.ts';

/** What an engine does for the core. */
export interface EngineRequest {
  /**
   * Sends the request to `target`: the upstream's address, or one of its workers' (again, after a failure); with
   * `startBy`, stamped with START_BY_FIELD (common/protocol.ts).
   */
  send(target: HostTarget, startBy?: number): void;
  /** Stops the host's request as last sent; whatever it answers or reports from then on is ignored. */
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

/**
 * How long a request whose worker's connection failed waits for its host's table to say that worker died (the
 * primary publishes an exit within milliseconds) before it fails as a request the worker cut itself.
 */
const WORKER_EXIT_WAIT_MS = 1_000;

/**
 * A request sent straight to a worker is started there within this long or not at all (START_BY_FIELD): a worker's
 * event loop turns every few milliseconds unless it is blocked, and a blocked one is known after BLOCKED_AFTER_MS.
 */
const START_WITHIN_MS = 1_000;

/**
 * A request of a blocked worker goes elsewhere this long after its start-by time: time for the worker's "turns
 * again" (its watchdog looks every 100 ms) to reach this proxy, had it started the request just in time.
 */
const START_BY_MARGIN_MS = 500;

/** How many times a request a worker did not start (past its start-by time) goes elsewhere before it fails. */
const NOT_STARTED_TRIES = 3;

/** Connects again to a host whose listen queue was full: this often, at most this many times (about 2 s). */
const QUEUE_FULL_WAIT_MS = 10;
const QUEUE_FULL_TRIES = 200;

/** What every forwarded request shares: the engine's options, the answers to each failure, and each host's workers. */
export interface ForwardingShared extends ForwarderOptions {
  fail: Failures;
  workersOf: Map<UpstreamState, HostWorkers>;
}

/** `workerLeft`: a host's worker left its table, and the engine closes its connections to it once they are idle. */
export function forwardingShared(options: ForwarderOptions, workerLeft: (target: WorkerTarget) => void): ForwardingShared {
  // Only a host on a unix socket publishes its workers (theirs are unix sockets on the same machine): a TCP one is
  // not asked, which spares a host behind --host-allow or mutual TLS a refused connection every few seconds.
  const workersOf = new Map(
    options.upstreams.all
      .filter((state) => state.upstream.kind === 'unix')
      .map((state) => {
        const workers = new HostWorkers(state.upstream, { left: workerLeft });
        workers.follow();
        return [state, workers];
      }),
  );
  return { ...options, fail: failures(options), workersOf };
}

/** Stops following every host's table (an engine that retires). */
export function stopFollowing(shared: ForwardingShared): void {
  for (const workers of shared.workersOf.values()) workers.close();
}

/** An engine's connections to each host process (a primary or a worker), by address. */
export interface HostLinks<T> {
  /** Those to `target`, made on first use. */
  to: (target: HostTarget) => T;
  /** A worker left its host's table: its connections close as their requests end. */
  left: (target: HostTarget) => void;
  /** Every connection closes as its request ends; a request still sent (another try) gets links closed after it. */
  retire: () => void;
}

/** `open` makes the connections to one address, `close` ends them once their requests have (as a pool's close() does). */
export function hostLinks<T>(open: (target: HostTarget) => T, close: (links: T) => void): HostLinks<T> {
  const byAddress = new Map<string, T>();
  let retired = false;
  return {
    to: (target) => {
      const { address } = target;
      const known = byAddress.get(address);
      if (known !== undefined && !retired) return known;
      const links = open(target);
      // Retired, a request it still sends gets links of their own, closed once that request ends (it is sent right
      // after this returns, and a closing pool or connection set finishes what it was given).
      if (retired) setImmediate(() => close(links));
      else byAddress.set(address, links);
      return links;
    },
    left: ({ address }) => {
      const links = byAddress.get(address);
      byAddress.delete(address);
      if (links !== undefined) close(links);
    },
    retire: () => {
      retired = true;
      for (const links of byAddress.values()) close(links);
    },
  };
}

export class ForwardedRequest implements SentRequest {
  /** Answered by the proxy itself (504, a refused body, a host error page) or nobody left: the host's answer is dropped. */
  settled = false;
  /** The upstream it was sent to last. */
  upstream!: UpstreamState;
  /** The worker of that upstream it went to straight, if it did not go through the upstream's primary. */
  private worker: WorkerTarget | undefined;
  /** Its place among the requests sent to that worker. */
  private sentEntry: InFlightEntry<SentRequest> | undefined;
  /** Sent once more after its worker's connection failed before an answer (a worker that died). */
  private resent = false;
  private queueFullTries = 0;
  /** When it was last sent (performance.now()). */
  private sentAt = 0;
  /** Past this (Date.now()) its worker does not start it; undefined when not sent straight to a worker. */
  private startBy: number | undefined;
  /** Set while it waits for its start-by time to pass before leaving a blocked worker. */
  private rerouteTimer: NodeJS.Timeout | undefined;
  /** Times a worker answered that it did not start it. */
  private notStarted = 0;
  /** Upstreams that could not be reached for it. */
  private tried: Set<UpstreamState> | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private engine!: EngineRequest;
  /** Whether another upstream may be tried when one cannot be reached. */
  private readonly retryable: boolean;
  /** The target's path, without its query: what the log lines name. */
  readonly path: string;
  readonly requestId: string;

  constructor(
    readonly ctx: RequestContext,
    /** The target as it goes to the host. */
    readonly url: string,
    private readonly shared: ForwardingShared,
  ) {
    this.path = url.split('?', 1)[0];
    this.requestId = ctx.id;
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
      // An HTTP/2 response reads as finished once its stream has closed, reset by the client or not: whether this
      // server ended it is writableEnded there.
      const answered = isHttp2(req) ? res.writableEnded : res.writableFinished;
      if (!answered) this.abandon('client closed the request');
      this.leaveWorker();
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

  private sendTo(upstream: UpstreamState, except?: WorkerTarget): void {
    this.upstream = upstream;
    this.sentAt = performance.now();
    upstream.requests += 1;
    const worker = this.shared.workersOf.get(upstream)?.pick(except);
    this.worker = worker;
    this.sentEntry = worker?.sent.add(this);
    // Only what may go elsewhere is stamped: the rest is never sent away from its worker.
    this.startBy = worker && this.retryable ? Date.now() + START_WITHIN_MS : undefined;
    this.engine.send(worker ? worker.target : upstream.target, this.startBy);
  }

  /** The request no longer counts towards its worker's load (least-busy routing). */
  private leaveWorker(): WorkerTarget | undefined {
    const worker = this.worker;
    if (this.sentEntry) worker?.sent.delete(this.sentEntry);
    this.sentEntry = undefined;
    this.worker = undefined;
    return worker;
  }

  reroute(): void {
    // Only a request that consumed nothing and has no answer yet.
    if (this.settled || this.ctx.res.headersSent || !this.retryable || this.rerouteTimer) return;
    // Not before its worker could no longer start it: then it runs once, here or there.
    const wait = this.startBy === undefined ? 0 : this.startBy + START_BY_MARGIN_MS - Date.now();
    if (wait > 0) {
      this.rerouteTimer = setTimeout(() => {
        this.rerouteTimer = undefined;
        const worker = this.worker;
        if (worker?.blocked && !worker.running.includes(this.requestId)) this.reroute();
      }, wait);
      return;
    }
    const worker = this.leaveWorker();
    if (!worker) return;
    this.engine.abort('its worker is blocked');
    this.shared.fail.workerFailed(
      Object.assign(new Error('its event loop does not turn'), { code: 'EBUSY' }),
      this.ctx,
      this.path,
      worker.pid,
      'blocked',
    );
    this.sendTo(this.upstream, worker);
  }

  /** The client went away, the deadline passed or the server answers it itself: the host's work stops (its signal fires). */
  abandon(reason: string): void {
    this.settled = true;
    clearTimeout(this.deadline);
    clearTimeout(this.rerouteTimer);
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
    clearTimeout(this.rerouteTimer);
    this.rerouteTimer = undefined;
    const { upstreams, fail } = this.shared;
    upstreams.reached(this.upstream);
    if (this.settled) return false;
    if (headers[NOT_STARTED_FIELD] !== undefined && this.notStarted < NOT_STARTED_TRIES) {
      // Its worker did not start it (it came past its start-by time): nothing ran, and it goes elsewhere.
      this.notStarted += 1;
      const worker = this.leaveWorker();
      this.engine.abort('not started by its worker');
      this.sendTo(this.upstream, worker);
      return false;
    }
    const answer = fail.hostSignals(statusCode, headers, this.ctx);
    if (answer === 'relay') return true;
    this.settled = true;
    if (answer === 'host-error') fail.hostRefused(statusCode, this.ctx, this.path, headers);
    else if (answer === 'controller-failed') fail.controllerFailed(this.ctx);
    else if (answer === 'pool-full') fail.poolFull(this.ctx, this.path);
    else fail.endedWithoutHeaders(this.ctx, this.path);
    return false;
  }

  /** A chunk of a relayed answer passes on its way to the client: %b of one without Content-Length, or cut. */
  passed(bytes: number): void {
    this.ctx.streamedBytes += bytes;
  }

  /** The host's answer ended, with these trailers: true when the client's answer was cut instead of ended. */
  answerEnded(trailers: Record<string, string | string[] | undefined>): boolean {
    return this.shared.fail.trailers(trailers, this.ctx, this.path);
  }

  /** Sending failed, or the host's connection did before its head: another upstream is tried, or the client gets the page. */
  failed(err: NodeJS.ErrnoException): void {
    if (this.settled) return;
    const { upstreams, fail } = this.shared;
    const { req, res } = this.ctx;
    const connect = isConnectError(err);
    // Nothing reached the host: a request without a body may go again (an ended request stream pipes into
    // the next upstream request as an immediate end).
    const again = this.retryable && !res.headersSent && !req.socket?.destroyed;
    const worker = this.leaveWorker();
    if (err.code === 'EAGAIN' && again && (this.queueFullTries += 1) <= QUEUE_FULL_TRIES) {
      // A unix socket whose listen queue is full refuses a connect at once, where TCP retries: nothing reached the
      // host, so it is connected again shortly (the builtin engine does this itself, for any request).
      setTimeout(() => {
        if (!this.settled && !res.headersSent && !req.socket?.destroyed) this.sendTo(this.upstream);
      }, QUEUE_FULL_WAIT_MS);
      return;
    }
    if (worker && connect) {
      // A worker that cannot be reached (it retired a moment ago) is left out; nothing reached it.
      this.shared.workersOf.get(this.upstream)!.unreachable(worker);
      if (again) {
        fail.workerFailed(err, this.ctx, this.path, worker.pid, 'unreachable');
        return this.sendTo(this.upstream, worker);
      }
    } else if (worker && again && !this.resent) {
      // Its connection failed before an answer. A worker that died takes the requests it ran with it, and its host's
      // table says so at once, with the request that caused the death when known: every other request that consumed
      // nothing then goes once more to another worker or the primary, as with nginx's proxy_next_upstream error, and
      // that one never (common/workerLoss.ts). So does one sent a moment ago to a worker that retires (it closed the
      // kept-alive connection the request went on). A call the worker cut itself (past max_execution_time, at least
      // 1.5 s in) fails as it would have, though its worker retires then too.
      this.resent = true;
      const sentMs = performance.now() - this.sentAt;
      void worker.fateWithin(WORKER_EXIT_WAIT_MS).then((fate) => {
        if (this.settled) return;
        const resendable = !res.headersSent && !req.socket?.destroyed;
        if (!sendAgainAfterLoss({ requestId: this.requestId, resendable, resent: false, sentMs }, fate)) return this.giveUp(err);
        fail.workerFailed(err, this.ctx, this.path, worker.pid, 'closed');
        this.sendTo(this.upstream, worker);
      });
      return;
    } else if (connect) {
      upstreams.connectFailed(this.upstream);
      const next = again ? upstreams.pick((this.tried ??= new Set()).add(this.upstream)) : undefined;
      if (next) {
        fail.connectFailed(err, this.ctx, this.path, this.upstream);
        return this.sendTo(next);
      }
    } else {
      upstreams.reached(this.upstream);
    }
    this.giveUp(err);
  }

  /** Nothing more to try: the client gets the page for `err`. */
  private giveUp(err: NodeJS.ErrnoException): void {
    clearTimeout(this.deadline);
    this.settled = true;
    this.shared.fail.failed(err, this.ctx, this.path, this.upstream);
  }

  /** The host sent bytes past the end of this request's answer: they belong to no request, and its connection closed. */
  pastEnd(): void {
    this.shared.fail.pastEnd(this.ctx, this.path, this.upstream);
  }

  /** The host's answer broke off after its head: the client's answer is cut, and logged once. */
  cutShort(err: NodeJS.ErrnoException): void {
    this.shared.fail.cutShort(err, this.ctx, this.path, this.upstream);
  }
}
