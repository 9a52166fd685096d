// The undici engine: a keep-alive Pool to the host, driven through its dispatch handler API so bytes go
// straight from the host's socket to the client's response, with no stream or promise per request
// (Node's http.request client, under http-proxy, is the slow part of forwarding: see the bench).
import { Pool, type Dispatcher } from 'undici';
import { formatUpstream, type Upstream } from '../common/settingParsers.ts';
import {
  afterBody,
  failures,
  forwardedHeaders,
  limitedBody,
  IDLE_UPSTREAM_SOCKET_MS,
  isConnectError,
  mayRetry,
  NODE_FRAMED,
  responseHeaders,
  type Failures,
  type Forward,
  type ForwarderOptions,
} from './forwarding.ts';
import { bodyFollows } from './protocols.ts';
import type { RequestContext } from './requestContext.ts';
import type { Upstreams, UpstreamState } from './upstreams.ts';

/** Fields undici frames or refuses itself (the other hop-by-hop ones are never forwarded). */
const ENGINE_FRAMED = ['transfer-encoding', 'expect'] as const;

/** One forwarded request: the host's answer is written to the request's answer sink as it arrives. */
class ForwardHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  /** Answered by the proxy itself (504) or nobody left to answer: the host's answer is dropped. */
  settled = false;
  private countBytes = false;
  /** Upstreams that could not be reached for this request. */
  private tried: Set<UpstreamState> | undefined;
  private upstream!: UpstreamState;
  deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly ctx: RequestContext,
    private readonly path: string,
    private readonly engine: Engine,
    private readonly options: Dispatcher.DispatchOptions,
    private readonly retryable: boolean,
  ) {}

  send(upstream: UpstreamState): void {
    this.upstream = upstream;
    this.controller = undefined;
    upstream.requests += 1;
    try {
      this.engine.poolFor(upstream).dispatch(this.options, this);
    } catch (err) {
      // undici refuses some requests synchronously (invalid header values).
      this.onResponseError(undefined as unknown as Dispatcher.DispatchController, err as Error & { code?: string });
    }
  }

  /** The client went away, or the deadline passed: stop the host's work (its signal fires). */
  abandon(reason: string): void {
    this.settled = true;
    clearTimeout(this.deadline);
    this.controller?.abort(new Error(reason));
  }

  timeout(): void {
    if (this.settled || this.ctx.res.headersSent) return;
    this.engine.fail.timedOut(this.ctx, this.path);
    this.abandon('no response headers in time');
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled) controller.abort(new Error('abandoned before it started'));
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (this.settled) return controller.abort(new Error('answered already'));
    clearTimeout(this.deadline);
    this.engine.upstreams.reached(this.upstream);
    const { fail } = this.engine;
    const answer = fail.hostSignals(statusCode, headers, this.ctx);
    if (answer !== 'relay') {
      // Its body is read and dropped below, so the connection stays for the next request.
      this.settled = true;
      if (answer === 'host-error') return fail.hostRefused(statusCode, this.ctx, this.path);
      if (answer === 'controller-failed') return fail.controllerFailed(this.ctx);
      if (answer === 'pool-full') return fail.poolFull(this.ctx, this.path);
      return fail.endedWithoutHeaders(this.ctx, this.path);
    }
    this.countBytes = headers['content-length'] === undefined;
    this.ctx.answer.head(statusCode, responseHeaders(headers, NODE_FRAMED));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    if (this.countBytes) this.ctx.streamedBytes += chunk.length;
    if (!this.ctx.answer.write(chunk)) {
      controller.pause();
      this.ctx.answer.onDrain(() => controller.resume());
    }
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers: Record<string, string | string[] | undefined>): void {
    if (this.settled || this.engine.fail.trailers(trailers, this.ctx)) return;
    this.ctx.answer.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, cause: Error & { code?: string }): void {
    if (this.settled) return;
    // undici says UND_ERR_SOCKET ("other side closed") where Node's client says ECONNRESET.
    const err = Object.assign(new Error(cause.message), { code: cause.code === 'UND_ERR_SOCKET' ? 'ECONNRESET' : cause.code });
    const { upstreams, fail } = this.engine;
    if (isConnectError(err)) {
      upstreams.connectFailed(this.upstream);
      const next = this.retryable && !this.ctx.res.headersSent ? upstreams.pick((this.tried ??= new Set()).add(this.upstream)) : undefined;
      if (next) {
        fail.connectFailed(err, this.ctx, this.path, this.upstream);
        return this.send(next);
      }
    } else {
      upstreams.reached(this.upstream);
    }
    clearTimeout(this.deadline);
    this.settled = true;
    fail.failed(err, this.ctx, this.path, this.upstream);
  }
}

/** What every request's handler shares. */
interface Engine {
  upstreams: Upstreams;
  fail: Failures;
  poolFor(upstream: UpstreamState): Pool;
}

function originOf(upstream: Upstream): string {
  return upstream.kind === 'unix' ? 'http://localhost' : formatUpstream(upstream);
}

export function createUndiciForwarder(options: ForwarderOptions): Forward {
  const { upstreams, upstreamTimeoutMs, limitRequestBody } = options;
  const pools = new Map(
    upstreams.all.map((state) => [
      state,
      new Pool(originOf(state.upstream), {
        socketPath: state.upstream.kind === 'unix' ? state.upstream.path : undefined,
        connections: 512,
        keepAliveTimeout: IDLE_UPSTREAM_SOCKET_MS,
        keepAliveMaxTimeout: IDLE_UPSTREAM_SOCKET_MS,
        // The deadline is ours (exact, and logged as a 504); undici's timers are coarse.
        headersTimeout: 0,
        bodyTimeout: 0,
      }),
    ]),
  );
  const engine: Engine = { upstreams, fail: failures(options), poolFor: (upstream) => pools.get(upstream)! };

  return function forward(ctx, url) {
    const { req, res } = ctx;
    const withBody = bodyFollows(req);
    const headers = forwardedHeaders(ctx, ENGINE_FRAMED, options.markLocalClients);
    // undici destroys a body stream it could not send, and destroying `req` would reset the client's
    // connection instead of answering 503: it gets a stream of its own.
    const body = withBody
      ? limitedBody(req, res, limitRequestBody, (received) => {
          handler.abandon('request body over LimitRequestBody');
          engine.fail.tooLarge(ctx, received);
        })
      : null;
    const dispatch: Dispatcher.DispatchOptions = { path: url, method: req.method as Dispatcher.HttpMethod, headers, body };
    const handler = new ForwardHandler(ctx, url.split('?', 1)[0], engine, dispatch, mayRetry(req, withBody));
    res.once('close', () => {
      if (!res.writableFinished) handler.abandon('client closed the request');
    });
    if (upstreamTimeoutMs > 0) {
      afterBody(req, () => {
        if (!handler.settled) handler.deadline = setTimeout(() => handler.timeout(), upstreamTimeoutMs);
      });
    }
    handler.send(upstreams.pick()!);
    return () => handler.abandon('request body malformed');
  };
}
