// Forwarding /External/… to the host with http-proxy (the design's choice), over a keep-alive agent.
// http-proxy 1.18.1 is unmaintained; each pass below closes one of its known gaps.
import { Agent, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import httpProxy from 'http-proxy';
import { formatUpstream, type Upstream } from '../common/config.ts';
import { CONTROLLER_PREFIX } from '../common/protocol.ts';
import { countBodyBytes } from './accessLog.ts';
import { sendErrorPage } from './errorPages.ts';
import { clientAddress, clientOf, type ErrorLog } from './errorLog.ts';

/** RFC 9110 §7.6.1: connection-specific fields are never forwarded, in either direction. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'upgrade', 'trailer'] as const;

/** Errors that mean the host could not be reached at all (down or restarting): 503, not 500. */
const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

type Headers = IncomingMessage['headers'];

function removeHopByHop(headers: Headers): void {
  const nominated = headers.connection;
  if (typeof nominated === 'string') {
    for (const name of nominated.split(',')) delete headers[name.trim().toLowerCase()];
  }
  for (const name of HOP_BY_HOP) delete headers[name];
}

/** `Latest` for `/External/Latest`: what an operator greps for. */
function controllerOf(path: string): string {
  return path.slice(CONTROLLER_PREFIX.length) || '-';
}

// ── request passes, in order ────────────────────────────────────────────────────────────────────

/** Hop-by-hop fields, and `Trailer` in particular: on a GET it makes Node's client throw
 *  ERR_HTTP_TRAILER_INVALID inside http-proxy, which crashes the process (node-http-proxy #1647). */
function stripHopByHop(req: IncomingMessage): void {
  removeHopByHop(req.headers);
}

/** Forwarding headers come from this proxy only: a client must not pick the address the host sees. */
function setForwarded(req: IncomingMessage): void {
  for (const name of Object.keys(req.headers)) {
    if (name.startsWith('x-forwarded-') || name === 'forwarded') delete req.headers[name];
  }
  req.headers['x-forwarded-for'] = clientAddress(req.socket.remoteAddress);
  req.headers['x-forwarded-proto'] = 'http';
  if (req.headers.host) req.headers['x-forwarded-host'] = req.headers.host;
}

const requestPasses = [stripHopByHop, setForwarded] as const;

// ─────────────────────────────────────────────────────────────────────────────────────────────────

export type Forward = (req: IncomingMessage, res: ServerResponse, url: string, requestId: string) => void;

/** The agent drops sockets idle this long; the host keeps them longer (host/app.ts) and never closes one itself while retiring. */
const IDLE_UPSTREAM_SOCKET_MS = 10_000;

export function createForwarder(upstream: Upstream, errorLog: ErrorLog, upstreamTimeoutMs: number): Forward {
  // `timeout` is what makes the agent drop idle sockets; Node sets it on busy sockets too, where it only
  // emits 'timeout', which nothing here listens to (the response deadline is our own timer below).
  const agent = new Agent({ keepAlive: true, maxSockets: 512, maxFreeSockets: 256, scheduling: 'lifo', timeout: IDLE_UPSTREAM_SOCKET_MS });
  const target = upstream.kind === 'unix' ? { socketPath: upstream.path } : { host: upstream.host, port: upstream.port, protocol: 'http:' };
  const upstreamName = formatUpstream(upstream);
  const proxy = httpProxy.createProxyServer({ agent, xfwd: false, ws: false });

  /** Requests the proxy has answered itself (504): whatever the host does later is ignored. */
  const answered = new WeakSet<IncomingMessage>();
  const upstreamRequests = new WeakMap<IncomingMessage, ClientRequest>();
  const deadlines = new WeakMap<IncomingMessage, NodeJS.Timeout>();

  proxy.on('proxyReq', (proxyReq, req, res) => {
    upstreamRequests.set(req, proxyReq);
    // The client went away before the answer: stop the host's work instead of letting it run on.
    res.once('close', () => {
      if (!res.writableFinished) proxyReq.destroy();
    });
  });

  /** No response header within the limit: 504, and the host's request is closed (its signal fires). */
  function onDeadline(req: IncomingMessage, res: ServerResponse, path: string): void {
    answered.add(req);
    const seconds = upstreamTimeoutMs / 1000;
    errorLog.write({
      module: 'proxy',
      level: 'error',
      status: '(ETIMEDOUT)The timeout specified has expired',
      client: clientOf(req.socket),
      message: `Timeout waiting for output from controller ${controllerOf(path)} (${path}): no response headers within ${seconds} s (max_execution_time ${seconds} s)`,
      requestId: String(req.headers['x-request-id'] ?? ''),
    });
    sendErrorPage(res, 504);
    upstreamRequests.get(req)?.destroy();
  }

  proxy.on('proxyRes', (proxyRes, req, res) => {
    clearTimeout(deadlines.get(req));
    if (answered.has(req)) {
      proxyRes.destroy();
      return;
    }
    removeHopByHop(proxyRes.headers);
    // http-proxy copies the client's Connection header otherwise, which we removed: say what Node will do.
    proxyRes.headers.connection = res.shouldKeepAlive ? 'keep-alive' : 'close';
    if (proxyRes.headers['content-length'] === undefined) proxyRes.on('data', (chunk: Buffer) => countBodyBytes(res, chunk.length));
    // pipe() does not pass errors on: a host dying mid-body would leave the client waiting forever.
    proxyRes.once('close', () => {
      if (!proxyRes.complete) res.destroy();
    });
  });

  function onProxyError(err: NodeJS.ErrnoException, req: IncomingMessage, response: ServerResponse): void {
    clearTimeout(deadlines.get(req));
    if (answered.has(req) || req.socket.destroyed) return; // answered already, or nobody left to answer
    const requestId = String(req.headers['x-request-id'] ?? '');
    const client = clientOf(req.socket);
    const code = err.code ?? 'EPROTO';
    const path = (req.url ?? '').split('?', 1)[0];
    if (CONNECT_ERRORS.has(code)) {
      errorLog.write({
        module: 'proxy',
        level: 'error',
        status: `(${code})${err.message}`,
        client,
        message: `attempt to connect to upstream ${upstreamName} failed for ${path}`,
        requestId,
      });
      sendErrorPage(response, 503);
      return;
    }
    // The host ended the request without a response header (DESIGN.md §3).
    errorLog.write({
      module: 'proxy',
      level: 'error',
      status: `(${code})${err.message}`,
      client,
      message: `End of script output before headers: ${path}`,
      requestId,
    });
    sendErrorPage(response, 500);
  }
  proxy.on('error', (err, req, res) => onProxyError(err, req, res as ServerResponse));

  return function forward(req, res, url, requestId) {
    for (const pass of requestPasses) pass(req);
    req.headers['x-request-id'] = requestId;
    req.url = url;
    if (upstreamTimeoutMs > 0) {
      const path = url.split('?', 1)[0];
      deadlines.set(req, setTimeout(() => onDeadline(req, res, path), upstreamTimeoutMs));
      // A client that leaves needs no deadline.
      res.once('close', () => clearTimeout(deadlines.get(req)));
    }
    try {
      proxy.web(req, res, { target });
    } catch (err) {
      // http.request throws synchronously on headers Node refuses to send.
      onProxyError(err as NodeJS.ErrnoException, req, res);
    }
  };
}
