// The undici engine: a keep-alive Pool to the host, driven through its dispatch handler API so bytes go
// straight from the host's socket to the client's response, with no stream or promise per request
// (Node's http.request client, under http-proxy, is the slow part of forwarding: see the bench).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Pool, type Dispatcher } from 'undici';
import { countBodyBytes } from './accessLog.ts';
import { failures, forwardedHeaders, IDLE_UPSTREAM_SOCKET_MS, removeHopByHop, type Failures, type Forward, type ForwarderOptions } from './forwarding.ts';

/** Fields undici frames or refuses itself (the other hop-by-hop ones are never forwarded). */
const ENGINE_FRAMED = ['transfer-encoding', 'expect'] as const;

/** One forwarded request: the host's answer is written to `res` as it arrives. */
class ForwardHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  /** Answered by the proxy itself (504) or nobody left to answer: the host's answer is dropped. */
  private settled = false;
  private countBytes = false;
  deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly path: string,
    private readonly requestId: string,
    private readonly fail: Failures,
  ) {}

  /** The client went away, or the deadline passed: stop the host's work (its signal fires). */
  abandon(reason: string): void {
    this.settled = true;
    clearTimeout(this.deadline);
    this.controller?.abort(new Error(reason));
  }

  timeout(): void {
    if (this.settled || this.res.headersSent) return;
    this.fail.timedOut(this.req, this.res, this.path, this.requestId);
    this.abandon('no response headers in time');
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled) controller.abort(new Error('abandoned before it started'));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (this.settled) return controller.abort(new Error('answered already'));
    clearTimeout(this.deadline);
    removeHopByHop(headers);
    delete headers['transfer-encoding']; // Node frames the client's response itself
    this.countBytes = headers['content-length'] === undefined;
    this.res.writeHead(statusCode, headers);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.countBytes) countBodyBytes(this.res, chunk.length);
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once('drain', () => controller.resume());
    }
  }

  onResponseEnd(): void {
    this.res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error & { code?: string }): void {
    clearTimeout(this.deadline);
    if (this.settled) return;
    this.settled = true;
    // The host died mid-body: the client can only be cut.
    if (this.res.headersSent) return void this.res.destroy();
    // undici says UND_ERR_SOCKET ("other side closed") where Node's client says ECONNRESET.
    const code = err.code === 'UND_ERR_SOCKET' ? 'ECONNRESET' : err.code;
    this.fail.failed(Object.assign(new Error(err.message), { code }), this.req, this.res, this.path, this.requestId);
  }
}

export function createUndiciForwarder(options: ForwarderOptions): Forward {
  const { upstream, upstreamTimeoutMs } = options;
  const fail = failures(options);
  const pool = new Pool(upstream.kind === 'unix' ? 'http://localhost' : `http://${upstream.host}:${upstream.port}`, {
    socketPath: upstream.kind === 'unix' ? upstream.path : undefined,
    connections: 512,
    keepAliveTimeout: IDLE_UPSTREAM_SOCKET_MS,
    keepAliveMaxTimeout: IDLE_UPSTREAM_SOCKET_MS,
    // The deadline is ours (exact, and logged as a 504); undici's timers are coarse.
    headersTimeout: 0,
    bodyTimeout: 0,
  });

  return function forward(req, res, url, requestId) {
    const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
    const headers = forwardedHeaders(req, requestId, ENGINE_FRAMED);
    const handler = new ForwardHandler(req, res, url.split('?', 1)[0], requestId, fail);
    res.once('close', () => {
      if (!res.writableFinished) handler.abandon('client closed the request');
    });
    if (upstreamTimeoutMs > 0) handler.deadline = setTimeout(() => handler.timeout(), upstreamTimeoutMs);
    try {
      pool.dispatch({ path: url, method: req.method as Dispatcher.HttpMethod, headers, body: hasBody ? req : null }, handler);
    } catch (err) {
      // undici refuses some requests synchronously (invalid header values).
      handler.onResponseError(undefined as unknown as Dispatcher.DispatchController, err as Error & { code?: string });
    }
  };
}
