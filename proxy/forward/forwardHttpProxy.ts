// The http-proxy engine (the design's choice) over a keep-alive agent. http-proxy 1.18.1 is
// unmaintained; what it lacks is made up here and in the forwarding core (forwardingCore.ts): a deadline
// of our own (its proxyTimeout looks like a reset), the upstream request destroyed when the client leaves
// (it only listens for 'aborted', which a finished GET never emits), hop-by-hop response fields removed,
// and a client not left hanging when the host dies mid-body.
import { Agent, type ClientRequest, type IncomingMessage } from 'node:http';
import httpProxy from 'http-proxy';
import type { HostTarget } from '../../common/hostTarget.ts';
import {
  forwardedHeaders,
  IDLE_UPSTREAM_SOCKET_MS,
  NODE_FRAMED,
  responseHeaders,
  type Forwarding,
  type ForwarderOptions,
} from './forwarding.ts';
import { ForwardedRequest, forwardingShared, stopFollowing, type EngineRequest } from './forwardingCore.ts';
import type { RequestContext } from '../core/requestContext.ts';
import { isHttp2 } from '../core/protocols.ts';
import type { Readable } from 'node:stream';
import { START_BY_FIELD } from '../../common/protocol.ts';

/**
 * Not forwarded: http-proxy emits 'proxyReq' only for a request without `expect`, and without it this
 * engine cannot abort the host's request. The client got its 100 Continue from this server already.
 */
const ENGINE_FRAMED = ['expect'] as const;

/** One forwarded request as http-proxy sends it; its events find it by the client's request. */
interface ProxiedRequest extends EngineRequest {
  forwarded: ForwardedRequest;
  /** The request to the host, once http-proxy made it. */
  upstreamRequest?: ClientRequest;
  /** Sends so far: only the last one's failure reaches the core (an aborted one may have been sent again). */
  attempts: number;
}

export function createHttpProxyForwarder(options: ForwarderOptions): Forwarding {
  // A worker that left its host's table retires once its connections close: the idle ones are closed here
  // (the agent names a unix socket's connections after its path, last).
  const shared = forwardingShared(options, (worker) => {
    for (const [name, sockets] of Object.entries(agent.freeSockets))
      if (name.endsWith(`:${worker.socket}`)) for (const socket of sockets ?? []) socket.destroy();
  });
  // `timeout` is what makes the agent drop idle sockets; Node sets it on busy sockets too, where it only
  // emits 'timeout', which nothing here listens to (the response deadline is the core's).
  const agentOptions = {
    keepAlive: true,
    // No cap (Node's default): a cap would queue a fast request behind slow ones (forwardBuiltin.ts says why).
    maxFreeSockets: 256,
    scheduling: 'lifo',
    timeout: IDLE_UPSTREAM_SOCKET_MS,
  } as const;
  const agent = new Agent(agentOptions);
  // An https:// upstream (mutual TLS) needs an agent of its own, which carries its TLS options and server name.
  const tlsAgents = new Map<string, Agent>();
  const agentFor = (target: HostTarget): Agent => {
    if (!target.tls) return agent;
    let tlsAgent = tlsAgents.get(target.address);
    if (!tlsAgent) tlsAgents.set(target.address, (tlsAgent = target.agent(agentOptions)));
    return tlsAgent;
  };
  // The answer is relayed here, through the request's answer sink (answerSink.ts), not piped to `res` by http-proxy.
  const proxy = httpProxy.createProxyServer({ agent, xfwd: false, ws: false, selfHandleResponse: true });
  const proxied = new WeakMap<IncomingMessage, ProxiedRequest>();

  proxy.on('proxyReq', (proxyReq, req) => {
    const request = proxied.get(req)!;
    // Abandoned before it had a socket: the host must not wait for its body.
    if (request.forwarded.settled) return void proxyReq.destroy();
    request.upstreamRequest = proxyReq;
  });

  proxy.on('proxyRes', (proxyRes, req, res) => {
    const { forwarded } = proxied.get(req)!;
    const late = forwarded.settled;
    if (!forwarded.answerHead(proxyRes.statusCode ?? 0, proxyRes.headers)) {
      // Answered here (or already): a host error's body is drained so the connection serves the next request;
      // a late answer goes with its connection.
      return void (late ? proxyRes.destroy() : proxyRes.resume());
    }
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
    const sink = forwarded.ctx.answer;
    sink.head(proxyRes.statusCode ?? 502, headers);
    proxyRes.on('data', (chunk: Buffer) => {
      forwarded.passed(chunk.length);
      if (sink.write(chunk)) return;
      proxyRes.pause();
      sink.onDrain(() => proxyRes.resume());
    });
    // A failure in the trailers cuts the client's answer instead of ending it.
    proxyRes.once('end', () => {
      if (!forwarded.answerEnded(proxyRes.trailers)) sink.end();
    });
    // A host dying mid-body would leave the client waiting forever.
    proxyRes.once('close', () => {
      if (!proxyRes.complete) forwarded.cutShort(Object.assign(new Error('other side closed'), { code: 'ECONNRESET' }));
    });
  });

  function forward(ctx: RequestContext, url: string): () => void {
    const { req, res } = ctx;
    const forwarded = new ForwardedRequest(ctx, url, shared);
    // http-proxy sends this instead of `req` (its `buffer` option).
    const body: Readable | undefined = forwarded.body() ?? undefined;
    const request: ProxiedRequest = {
      forwarded,
      attempts: 0,
      send(target: HostTarget, startBy?: number) {
        const attempt = ++request.attempts;
        const failed = (err: NodeJS.ErrnoException) => {
          if (attempt === request.attempts) forwarded.failed(err);
        };
        try {
          const stamp = startBy === undefined ? undefined : { [START_BY_FIELD]: String(startBy) };
          // http-proxy passes a unix socket's path on (its setupOutgoing), though its types know only host and port.
          const where = target.where as httpProxy.ProxyTarget;
          proxy.web(req, res, { target: where, agent: agentFor(target), buffer: body, headers: stamp }, failed);
        } catch (err) {
          // http.request throws synchronously on headers Node refuses to send.
          failed(err as NodeJS.ErrnoException);
        }
      },
      abort() {
        // Whatever the aborted request reports is not this request's any more.
        request.attempts += 1;
        request.upstreamRequest?.destroy();
      },
    };
    proxied.set(req, request);
    // http-proxy copies req.headers; the access log reads only Referer and User-Agent from it later.
    req.headers = forwardedHeaders(ctx, ENGINE_FRAMED, options.markLocalClients);
    req.url = url;
    return forwarded.start(request);
  }

  function retire(): void {
    stopFollowing(shared);
    // Each socket is closed as its request ends (none is kept free), the free ones now.
    for (const each of [agent, ...tlsAgents.values()]) {
      each.maxFreeSockets = 0;
      for (const sockets of Object.values(each.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
    }
  }

  return { forward, retire };
}
