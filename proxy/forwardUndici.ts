// The undici engine: a keep-alive Pool to the host, driven through its dispatch handler API so bytes go
// straight from the host's socket to the client's response, with no stream or promise per request
// (Node's http.request client, under http-proxy, is the slow part of forwarding: see the bench). What a
// forwarded request goes through besides moving bytes is the core's (forwardingCore.ts).
import type { Dispatcher, Pool } from 'undici';
// Pool alone, not the package's index, which also loads fetch, WebSocket and the mock and cache code: 6.5 MB
// of each proxy worker at rest (docs/benchmarks.md, "Start-up and memory"; e2e/roleModules checks it).
import UndiciPool from 'undici/lib/dispatcher/pool.js';
import { formatUpstream, type Upstream } from '../common/settingParsers.ts';
import {
  forwardedHeaders,
  IDLE_UPSTREAM_SOCKET_MS,
  NODE_FRAMED,
  responseHeaders,
  type ForwarderOptions,
  type Forwarding,
} from './forward/forwarding.ts';
import { ForwardedRequest, forwardingShared, hostLinks, stopFollowing, type EngineRequest } from './forward/forwardingCore.ts';
import { hostTlsFor } from './forward/hostTls.ts';
import { START_BY_FIELD } from '../common/protocol.ts';

/** Fields undici frames or refuses itself (the other hop-by-hop ones are never forwarded). */
const ENGINE_FRAMED = ['transfer-encoding', 'expect'] as const;

/** One forwarded request as undici dispatches it; each send is an attempt of its own. */
class UndiciRequest implements EngineRequest {
  private attempt: UndiciAttempt | undefined;

  constructor(
    private readonly forwarded: ForwardedRequest,
    private readonly poolFor: (target: Upstream) => Pool,
    private readonly options: Dispatcher.DispatchOptions,
  ) {}

  send(target: Upstream, startBy?: number): void {
    const attempt = (this.attempt = new UndiciAttempt(this.forwarded));
    const options =
      startBy === undefined
        ? this.options
        : { ...this.options, headers: { ...(this.options.headers as Record<string, string>), [START_BY_FIELD]: String(startBy) } };
    try {
      this.poolFor(target).dispatch(options, attempt);
    } catch (err) {
      // undici refuses some requests synchronously (invalid header values).
      attempt.onResponseError(undefined as unknown as Dispatcher.DispatchController, err as Error & { code?: string });
    }
  }

  abort(reason: string): void {
    this.attempt?.drop(reason);
  }
}

/** One send of a forwarded request: the host's answer is written to the request's answer sink as it arrives. */
class UndiciAttempt implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  /** Set once it is aborted: nothing it hears from then on reaches the request (it may have been sent again). */
  private dropped: Error | undefined;

  constructor(private readonly forwarded: ForwardedRequest) {}

  drop(reason: string): void {
    this.dropped ??= new Error(reason);
    this.controller?.abort(this.dropped);
  }

  /** Whether what it hears is to be ignored: it was dropped, or the request was answered otherwise. */
  private get over(): boolean {
    return this.dropped !== undefined || this.forwarded.settled;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.over) controller.abort(this.dropped ?? new Error('abandoned before it started'));
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (this.over) return controller.abort(this.dropped ?? new Error('answered already'));
    // Not relayed: its body is read and dropped below, so the connection stays for the next request.
    if (!this.forwarded.answerHead(statusCode, headers)) return;
    this.forwarded.ctx.answer.head(statusCode, responseHeaders(headers, NODE_FRAMED));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.over) return;
    this.forwarded.passed(chunk.length);
    const { answer } = this.forwarded.ctx;
    if (!answer.write(chunk)) {
      controller.pause();
      answer.onDrain(() => controller.resume());
    }
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers: Record<string, string | string[] | undefined>): void {
    if (this.over || this.forwarded.answerEnded(trailers)) return;
    this.forwarded.ctx.answer.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, cause: Error & { code?: string }): void {
    if (this.dropped) return;
    // undici says UND_ERR_SOCKET ("other side closed") where Node's client says ECONNRESET.
    this.forwarded.failed(Object.assign(new Error(cause.message), { code: cause.code === 'UND_ERR_SOCKET' ? 'ECONNRESET' : cause.code }));
  }
}

function originOf(upstream: Upstream): string {
  return upstream.kind === 'unix' ? 'http://localhost' : formatUpstream(upstream);
}

export function createUndiciForwarder(options: ForwarderOptions): Forwarding {
  const newPool = (target: Upstream) =>
    new UndiciPool(originOf(target), {
      socketPath: target.kind === 'unix' ? target.path : undefined,
      connect: hostTlsFor(target),
      connections: 512,
      keepAliveTimeout: IDLE_UPSTREAM_SOCKET_MS,
      keepAliveMaxTimeout: IDLE_UPSTREAM_SOCKET_MS,
      // The deadline is ours (exact, and logged as a 504); undici's timers are coarse.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  const pools = hostLinks(newPool, (pool) => void pool.close().catch(() => undefined));
  const shared = forwardingShared(options, (worker) => pools.left(worker.upstream));

  return {
    forward(ctx, url) {
      const forwarded = new ForwardedRequest(ctx, url, shared);
      const headers = forwardedHeaders(ctx, ENGINE_FRAMED, options.markLocalClients);
      const dispatch: Dispatcher.DispatchOptions = {
        path: url,
        method: ctx.req.method as Dispatcher.HttpMethod,
        headers,
        body: forwarded.body(),
      };
      return forwarded.start(new UndiciRequest(forwarded, pools.to, dispatch));
    },
    retire() {
      stopFollowing(shared);
      // A closed pool finishes what it was given, then closes its connections.
      pools.retire();
    },
  };
}
