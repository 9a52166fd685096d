// The http-proxy engine (the design's choice) over a keep-alive agent. http-proxy 1.18.1 is
// unmaintained; what it lacks is made up here: a deadline of our own (its proxyTimeout looks like a
// reset), the upstream request destroyed when the client leaves (it only listens for 'aborted', which
// a finished GET never emits), hop-by-hop response fields removed, and a client not left hanging when
// the host dies mid-body.
import { Agent, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import httpProxy from 'http-proxy';
import type { Upstream } from '../common/settingParsers.ts';
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
  type Forward,
  type ForwarderOptions,
} from './forwarding.ts';
import { bodyFollows, isHttp2 } from './protocols.ts';
import type { RequestContext } from './requestContext.ts';
import type { UpstreamState } from './upstreams.ts';

/**
 * Not forwarded: http-proxy emits 'proxyReq' only for a request without `expect`, and without it this
 * engine cannot abort the host's request. The client got its 100 Continue from this server already.
 */
const ENGINE_FRAMED = ['expect'] as const;

function targetOf(upstream: Upstream) {
  return upstream.kind === 'unix' ? { socketPath: upstream.path } : { host: upstream.host, port: upstream.port, protocol: 'http:' };
}

export function createHttpProxyForwarder(options: ForwarderOptions): Forward {
  const { upstreams, upstreamTimeoutMs, limitRequestBody } = options;
  const fail = failures(options);
  // `timeout` is what makes the agent drop idle sockets; Node sets it on busy sockets too, where it only
  // emits 'timeout', which nothing here listens to (the response deadline is our own timer below).
  const agent = new Agent({ keepAlive: true, maxSockets: 512, maxFreeSockets: 256, scheduling: 'lifo', timeout: IDLE_UPSTREAM_SOCKET_MS });
  // The answer is relayed here, through the request's answer sink (answerSink.ts), not piped to `res` by http-proxy.
  const proxy = httpProxy.createProxyServer({ agent, xfwd: false, ws: false, selfHandleResponse: true });

  /** Requests the proxy has answered itself (504): whatever the host does later is ignored. */
  const answered = new WeakSet<IncomingMessage>();
  const upstreamRequests = new WeakMap<IncomingMessage, ClientRequest>();
  const deadlines = new WeakMap<IncomingMessage, NodeJS.Timeout>();
  /** The body as counted against LimitRequestBody, which http-proxy sends instead of `req` (its `buffer` option). */
  const bodies = new WeakMap<IncomingMessage, Readable>();
  const pathOf = (req: IncomingMessage) => (req.url ?? '').split('?', 1)[0];
  /** http-proxy's events name the request, not its context. */
  const contexts = new WeakMap<IncomingMessage, RequestContext>();
  const ctxOf = (req: IncomingMessage) => contexts.get(req)!;

  proxy.on('proxyReq', (proxyReq, req, res) => {
    // Dropped before it had a socket (drop() found nothing to abort): the host must not wait for its body.
    if (answered.has(req)) return void proxyReq.destroy();
    upstreamRequests.set(req, proxyReq);
    res.once('close', () => {
      if (!res.writableFinished) proxyReq.destroy();
    });
  });

  proxy.on('proxyRes', (proxyRes, req, res) => {
    clearTimeout(deadlines.get(req));
    const upstream = sentTo.get(req);
    if (upstream) upstreams.reached(upstream);
    if (answered.has(req)) {
      proxyRes.destroy();
      return;
    }
    const answer = fail.hostSignals(proxyRes.statusCode ?? 0, proxyRes.headers, ctxOf(req));
    if (answer !== 'relay') {
      // Answered here: the body is drained so the connection serves the next request.
      answered.add(req);
      if (answer === 'host-error') fail.hostRefused(proxyRes.statusCode ?? 500, ctxOf(req), pathOf(req));
      else if (answer === 'controller-failed') fail.controllerFailed(ctxOf(req));
      else if (answer === 'pool-full') fail.poolFull(ctxOf(req), pathOf(req));
      else fail.endedWithoutHeaders(ctxOf(req), pathOf(req));
      proxyRes.resume();
      return;
    }
    const ctx = ctxOf(req);
    let headers: Record<string, string | string[] | undefined>;
    if (isHttp2(req)) {
      // HTTP/2 frames the body itself and has neither connection-specific fields nor reason phrases: Node
      // throws on the first (crashing the process) and warns on the second.
      headers = responseHeaders(proxyRes.headers, NODE_FRAMED);
    } else {
      headers = responseHeaders(proxyRes.headers);
      // A chunked body to an HTTP/1.0 client goes as it is, ended by the close (http-proxy's removeChunked).
      if (req.httpVersion === '1.0') delete headers['transfer-encoding'];
      headers.connection = res.shouldKeepAlive ? 'keep-alive' : 'close';
      if (proxyRes.statusMessage) res.statusMessage = proxyRes.statusMessage;
    }
    const countBytes = headers['content-length'] === undefined;
    const sink = ctx.answer;
    sink.head(proxyRes.statusCode ?? 502, headers);
    proxyRes.on('data', (chunk: Buffer) => {
      if (countBytes) ctx.streamedBytes += chunk.length;
      if (sink.write(chunk)) return;
      proxyRes.pause();
      sink.onDrain(() => proxyRes.resume());
    });
    // A failure in the trailers cuts the client's answer instead of ending it.
    proxyRes.once('end', () => {
      if (!fail.trailers(proxyRes.trailers, ctx)) sink.end();
    });
    // A host dying mid-body would leave the client waiting forever.
    proxyRes.once('close', () => {
      if (proxyRes.complete) return;
      const err = Object.assign(new Error('other side closed'), { code: 'ECONNRESET' });
      fail.cutShort(err, ctxOf(req), pathOf(req), upstream!);
    });
  });

  /** The upstream each request went to last, and those it could not reach. */
  const sentTo = new WeakMap<IncomingMessage, UpstreamState>();
  const unreachable = new WeakMap<IncomingMessage, Set<UpstreamState>>();

  function send(req: IncomingMessage, res: ServerResponse, upstream: UpstreamState, retryable: boolean): void {
    sentTo.set(req, upstream);
    upstream.requests += 1;
    try {
      proxy.web(req, res, { target: targetOf(upstream.upstream), buffer: bodies.get(req) }, (err) =>
        onProxyError(err, req, res, retryable),
      );
    } catch (err) {
      // http.request throws synchronously on headers Node refuses to send.
      onProxyError(err as NodeJS.ErrnoException, req, res, false);
    }
  }

  function onProxyError(err: NodeJS.ErrnoException, req: IncomingMessage, res: ServerResponse, retryable: boolean): void {
    if (answered.has(req)) return;
    const upstream = sentTo.get(req)!;
    if (isConnectError(err)) {
      upstreams.connectFailed(upstream);
      const tried = unreachable.get(req) ?? new Set<UpstreamState>();
      unreachable.set(req, tried.add(upstream));
      // An ended request stream pipes into the next upstream request as an immediate end, so a GET can go again.
      const next = retryable && !res.headersSent && !req.socket.destroyed ? upstreams.pick(tried) : undefined;
      if (next) {
        fail.connectFailed(err, ctxOf(req), pathOf(req), upstream);
        return send(req, res, next, retryable);
      }
    } else {
      upstreams.reached(upstream);
    }
    clearTimeout(deadlines.get(req));
    fail.failed(err, ctxOf(req), pathOf(req), upstream);
  }

  /** The proxy answers `req` itself: the host's request is aborted and its answer ignored. */
  function drop(req: IncomingMessage): void {
    answered.add(req);
    clearTimeout(deadlines.get(req));
    upstreamRequests.get(req)?.destroy();
  }

  return function forward(ctx, url) {
    const { req, res } = ctx;
    contexts.set(req, ctx);
    const withBody = bodyFollows(req);
    if (withBody) {
      bodies.set(
        req,
        limitedBody(req, res, limitRequestBody, (received) => {
          drop(req);
          fail.tooLarge(ctx, received);
        }),
      );
    }
    // http-proxy copies req.headers; the access log reads only Referer and User-Agent from it later.
    req.headers = forwardedHeaders(ctx, ENGINE_FRAMED, options.markLocalClients);
    req.url = url;
    if (upstreamTimeoutMs > 0) {
      afterBody(req, () => {
        if (answered.has(req) || res.writableEnded) return;
        deadlines.set(
          req,
          setTimeout(() => {
            answered.add(req);
            fail.timedOut(ctxOf(req), pathOf(req));
            upstreamRequests.get(req)?.destroy();
          }, upstreamTimeoutMs),
        );
      });
      // A client that leaves needs no deadline.
      res.once('close', () => clearTimeout(deadlines.get(req)));
    }
    send(req, res, upstreams.pick()!, mayRetry(req, withBody));
    return () => drop(req);
  };
}
