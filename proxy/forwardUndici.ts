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
  type Forward,
  type ForwarderOptions,
} from './forwarding.ts';
import { ForwardedRequest, forwardingShared, type EngineRequest } from './forwardingCore.ts';
import { hostTlsFor } from './hostTls.ts';
import type { UpstreamState } from './upstreams.ts';

/** Fields undici frames or refuses itself (the other hop-by-hop ones are never forwarded). */
const ENGINE_FRAMED = ['transfer-encoding', 'expect'] as const;

/** One forwarded request as undici dispatches it: the host's answer is written to the request's answer sink as it arrives. */
class UndiciRequest implements Dispatcher.DispatchHandler, EngineRequest {
  private controller: Dispatcher.DispatchController | undefined;

  constructor(
    private readonly forwarded: ForwardedRequest,
    private readonly poolFor: (upstream: UpstreamState) => Pool,
    private readonly options: Dispatcher.DispatchOptions,
  ) {}

  send(upstream: UpstreamState): void {
    this.controller = undefined;
    try {
      this.poolFor(upstream).dispatch(this.options, this);
    } catch (err) {
      // undici refuses some requests synchronously (invalid header values).
      this.onResponseError(undefined as unknown as Dispatcher.DispatchController, err as Error & { code?: string });
    }
  }

  abort(reason: string): void {
    this.controller?.abort(new Error(reason));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.forwarded.settled) controller.abort(new Error('abandoned before it started'));
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (this.forwarded.settled) return controller.abort(new Error('answered already'));
    // Not relayed: its body is read and dropped below, so the connection stays for the next request.
    if (!this.forwarded.answerHead(statusCode, headers)) return;
    this.forwarded.ctx.answer.head(statusCode, responseHeaders(headers, NODE_FRAMED));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.forwarded.settled) return;
    this.forwarded.passed(chunk.length);
    const { answer } = this.forwarded.ctx;
    if (!answer.write(chunk)) {
      controller.pause();
      answer.onDrain(() => controller.resume());
    }
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers: Record<string, string | string[] | undefined>): void {
    if (this.forwarded.settled || this.forwarded.answerEnded(trailers)) return;
    this.forwarded.ctx.answer.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, cause: Error & { code?: string }): void {
    // undici says UND_ERR_SOCKET ("other side closed") where Node's client says ECONNRESET.
    this.forwarded.failed(Object.assign(new Error(cause.message), { code: cause.code === 'UND_ERR_SOCKET' ? 'ECONNRESET' : cause.code }));
  }
}

function originOf(upstream: Upstream): string {
  return upstream.kind === 'unix' ? 'http://localhost' : formatUpstream(upstream);
}

export function createUndiciForwarder(options: ForwarderOptions): Forward {
  const shared = forwardingShared(options);
  const pools = new Map(
    options.upstreams.all.map((state) => [
      state,
      new UndiciPool(originOf(state.upstream), {
        socketPath: state.upstream.kind === 'unix' ? state.upstream.path : undefined,
        connect: hostTlsFor(state.upstream),
        connections: 512,
        keepAliveTimeout: IDLE_UPSTREAM_SOCKET_MS,
        keepAliveMaxTimeout: IDLE_UPSTREAM_SOCKET_MS,
        // The deadline is ours (exact, and logged as a 504); undici's timers are coarse.
        headersTimeout: 0,
        bodyTimeout: 0,
      }),
    ]),
  );
  const poolFor = (upstream: UpstreamState) => pools.get(upstream)!;

  return function forward(ctx, url) {
    const forwarded = new ForwardedRequest(ctx, url, shared);
    const headers = forwardedHeaders(ctx, ENGINE_FRAMED, options.markLocalClients);
    const dispatch: Dispatcher.DispatchOptions = {
      path: url,
      method: ctx.req.method as Dispatcher.HttpMethod,
      headers,
      body: forwarded.body(),
    };
    return forwarded.start(new UndiciRequest(forwarded, poolFor, dispatch));
  };
}
