// The web-server role: every request gets a context (requestContext.ts) and an access-log line, and goes
// through the ordered passes (passes/) until one answers it: framing and limits, the HTTPS redirect, the
// body's limits, the route, the status pages, the files of www/public, forwarding to the host. This file
// owns the listeners and their connections (HTTP/1.1 and HTTPS: HTTP/2 and HTTP/1.1 by ALPN) and the
// graceful stop; what never becomes a request is connectionRefusals.ts's, the connection cap connectionCap.ts's.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createSecureServer, type Http2SecureServer, type Http2Session } from 'node:http2';
import { Server as NetServer, type AddressInfo, type BlockList, type Socket } from 'node:net';
import { once } from 'node:events';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import type { ForwarderOptions, Forwarding } from '../forward/forwarding.ts';
import type { AccessLog } from '../observe/accessLog.ts';
import { http1Limits, type ClientLimits } from '../core/clientLimits.ts';
import type { CompressionSettings } from '../core/compression.ts';
import type { ErrorLog } from '../observe/errorLog.ts';
import type { ErrorPages } from '../core/errorPages.ts';
import { capConnections } from './connectionCap.ts';
import { connectionRefusals } from './connectionRefusals.ts';
import { answeringOn, isHttp2, responseGone } from '../core/protocols.ts';
import { InFlightList, type InFlightEntry } from '../forward/inFlightList.ts';
import { resetFloodGuard } from './http2ResetFlood.ts';
import { isLingering } from './lingeringClose.ts';
import type { MetricJson } from '../core/metricJson.ts';
import { metricsEndpoint, scrapeMetrics, type Scrape } from '../observe/metrics.ts';
import { processMetricsJson } from '../observe/processShare.ts';
import { RequestMetrics } from '../observe/requestMetrics.ts';
import { bodyLimitsPass } from '../passes/bodyLimits.ts';
import { filesPass } from '../passes/files.ts';
import { forwardPass } from '../passes/forward.ts';
import { framingPass } from '../passes/framing.ts';
import { httpsRedirectPass } from '../passes/httpsRedirect.ts';
import { routePass } from '../passes/routeTarget.ts';
import { statusPagesPass } from '../passes/statusPages.ts';
import { probesPass } from '../passes/probes.ts';
import { noteBrokenBody, watchBody } from './requestBodies.ts';
import { RequestContext, type Pass } from '../core/requestContext.ts';
import { requestIdOrNew } from '../../common/requestId.ts';
import { serverStatus } from '../observe/serverStatus.ts';
import type { StaticCache } from '../static/staticCache.ts';
import { staticFiles } from '../static/staticFiles.ts';
import { TLS_DEFAULTS, type TlsOptions } from './tls.ts';
import { MAX_HEADER_FIELDS } from '../../common/settings.ts';
import type { Upstreams } from '../forward/upstreams.ts';

export type { ClientLimits } from '../core/clientLimits.ts';

export interface ProxyOptions {
  www: string;
  upstreams: Upstreams;
  /** 0 = wait for the host's headers as long as it takes. */
  upstreamTimeoutMs: number;
  /** The chosen engine's constructor (roles/serveProxy.ts loads only that one). */
  createForwarder: (options: ForwarderOptions) => Forwarding;
  /** Small files and misses of www/public (watched by the caller). */
  staticCache: StaticCache;
  accessLog: AccessLog;
  errorLog: ErrorLog;
  /** Who may see /server-status. */
  statusAllow: BlockList;
  /** Timeouts and limits against slow or hostile clients (--header-timeout and the rest). */
  limits: ClientLimits;
  /** HTTPS (HTTP/2 and HTTP/1.1 by ALPN) beside plain HTTP, when a certificate is configured. */
  tls?: TlsOptions;
  /** Every worker's share, when this process is one of several (--proxy-workers): /metrics and /server-status sum them. */
  everyShare?: () => Promise<MetricJson[][]>;
  /** The codings --compression allows; a SIGHUP may change them while the server runs. */
  compression: CompressionSettings;
  /** What a refused request is answered with (--error-document); a SIGHUP may replace them while the server runs. */
  errorPages: ErrorPages;
  /** `extqs dev`: the host is told which clients are on loopback (proxy/forward/forwarding.ts). */
  markLocalClients?: boolean;
  /** The Server field of every answer (--server-tokens); absent sends none. */
  serverBanner?: string;
}

/**
 * What a SIGHUP may change in a lone proxy process (reload()); with --proxy-workers 2 or more the primary starts
 * workers with them instead (primary.ts).
 */
export type RequestPathOptions = Pick<
  ProxyOptions,
  'upstreams' | 'upstreamTimeoutMs' | 'createForwarder' | 'statusAllow' | 'limits' | 'serverBanner'
>;

/** The passes and what they were built with: a request runs on the path it arrived on to its end. */
interface RequestPath {
  passes: Pass[];
  forwarding: Forwarding;
  limits: ClientLimits;
  upstreams: Upstreams;
  serverBanner: string | undefined;
}

export interface ProxyServer {
  server: Server;
  /** The HTTPS listener, when `tls` was given (not listening yet, as `server`). */
  tlsServer?: Http2SecureServer;
  /** A SIGHUP's TLS settings: the pair read again (new handshakes use it) and the redirect. */
  reloadTls: (tls: TlsOptions) => void;
  /**
   * A SIGHUP's limits, timeouts, upstreams, engine, status allow list and Server field: new requests (and, for
   * the listeners' limits, new connections) take them; those in flight end on the old ones, whose engine then
   * closes its connections to the hosts.
   */
  reload: (next: RequestPathOptions) => void;
  /**
   * Graceful stop: no new connections, `Connection: close` on every answer from now on (keep-alive
   * clients would otherwise go on sending), and resolves when every response has ended, or were cut
   * after `graceMs`, so the access log has a line for each before it is drained. `retire` (a worker whose
   * successor serves the port) also waits for every connection to end, idle ones at their next answer or
   * keep-alive timeout; a second call without it closes the idle ones at once.
   */
  stop: (graceMs: number, retire?: boolean) => Promise<void>;
  /** This process's share of /metrics and /server-status. */
  metrics: () => Promise<MetricJson[]>;
  /** What /metrics answers (every process's share and the hosts'), for --metrics-port. */
  scrape: () => Promise<Scrape>;
}

/**
 * Responses queued behind an earlier pipelined one have no socket yet, and Node never closes them when
 * the connection dies (it destroys only their requests: _http_server.js abortIncoming). They are closed
 * here then, so each gets its access-log line, the engine aborts its upstream request, and a stop does
 * not wait for them. One listener a connection, however deep the pipeline.
 */
const queuedOn = new WeakMap<Socket, Set<ServerResponse>>();

function closeWithConnection(connection: Socket, res: ServerResponse): void {
  let queued = queuedOn.get(connection);
  if (!queued) {
    queued = new Set();
    queuedOn.set(connection, queued);
    connection.once('close', closeQueued.bind(null, queued));
  }
  queued.add(res);
  res.once('close', () => queued.delete(res));
}

/**
 * Those still queued have not closed. One destroyed already (an engine cut it when the host died
 * mid-body) got no 'close' either: a socketless destroy() emits nothing.
 */
function closeQueued(queued: Set<ServerResponse>): void {
  for (const waiting of queued) {
    if (waiting.socket) continue;
    if (!waiting.destroyed) waiting.destroy();
    waiting.emit('close');
  }
}

export function createProxyServer(options: ProxyOptions): ProxyServer {
  const { www, staticCache, accessLog, errorLog, errorPages, limits, tls, everyShare, compression, markLocalClients = false } = options;

  const open = new InFlightList<ServerResponse>();
  const startedAt = new Date();
  const requestMetrics = new RequestMetrics();
  let stopping = false;
  let onIdle: (() => void) | undefined;

  const server = createServer(
    {
      // Apache's defaults (common/settings.ts): RequestReadTimeout header=20, Timeout 60,
      // KeepAliveTimeout 5 (below the host's 75 s, host/worker/app.ts). A client past a deadline gets 408 and is cut.
      // 0 turns keep-alive off (nginx keepalive_timeout 0; handleRequest below): to Node it would mean never time out.
      ...http1Limits(limits),
      // A request without Host is refused by framingProblem(), with Apache's page and an access-log line.
      requireHostHeader: false,
    },
    handleRequest,
  );
  const servers: (Server | Http2SecureServer)[] = [server];
  let redirect = tls?.redirect === true;

  /** HTTP/1.1 connections of the HTTPS listener (HTTP/2 ones are sessions), for a graceful stop. */
  const tlsHttp1Sockets = new Set<TLSSocket>();
  const sessions = new Set<Http2Session>();
  const resetFlood = resetFloodGuard(() => path.limits.h2MaxConcurrentStreams, errorLog);
  let tlsServer: Http2SecureServer | undefined;
  if (tls) {
    tlsServer = createSecureServer({
      ...TLS_DEFAULTS,
      ...tls.pair,
      allowHTTP1: true,
      settings: {
        maxConcurrentStreams: limits.h2MaxConcurrentStreams,
        // Twice ours: Node resets a stream past its own limit silently; below it this server answers 431.
        maxHeaderListSize: limits.maxHeaderSize * 2,
      },
      // The most --max-header-fields allows, so a SIGHUP may raise it: the framing pass holds requests to the setting.
      maxHeaderListPairs: (MAX_HEADER_FIELDS + 4) * 2,
      // A client that connects and says nothing is cut at --header-timeout, as on plain HTTP (Node: 120 s).
      handshakeTimeout: limits.headerTimeout * 1000,
    });
    // node:http2's compatibility API: Http2ServerRequest and Http2ServerResponse have what the handler,
    // the engines and send use of IncomingMessage and ServerResponse (protocols.ts tells them apart).
    tlsServer.on('request', handleRequest as unknown as (req: unknown, res: unknown) => void);
    // Its HTTP/1.1 connections are served by node:http's code, which reads these from the server object.
    Object.assign(tlsServer, http1Limits(limits), { requireHostHeader: false, maxHeadersCount: 0 });
    // A session idle this long is closed (GOAWAY): the HTTP/1.1 keep-alive wait, at least the time a
    // client has to send a whole request, as a stream in flight keeps the session busy only when bytes move.
    tlsServer.setTimeout(Math.max(limits.keepAliveTimeout, limits.requestTimeout) * 1000);
    tlsServer.on('session', (session: Http2Session) => {
      resetFlood.watch(session);
      sessions.add(session);
      session.once('close', () => sessions.delete(session));
      if (stopping) session.close();
    });
    tlsServer.on('secureConnection', (socket: TLSSocket) => {
      if (socket.alpnProtocol === 'h2') return;
      tlsHttp1Sockets.add(socket);
      socket.once('close', () => tlsHttp1Sockets.delete(socket));
    });
    tlsServer.on('sessionError', (err: NodeJS.ErrnoException, session: Http2Session) => {
      if (resetFlood.calmed(session)) return;
      errorLog.write({ module: 'http2', level: 'info', message: `HTTP/2 session failed: ${err.code ?? ''} ${err.message}` });
    });
    servers.push(tlsServer);
  }

  function handleRequest(req: IncomingMessage, res: ServerResponse): void {
    // Bytes after a body read only to be dropped, on a connection answered `Connection: close`: not served.
    if (!isHttp2(req) && isLingering(req.socket)) return void req.socket.destroy();
    // Made now: a closed stream's request no longer reads its client's address.
    const ctx = new RequestContext(req, res, requestIdOrNew(req.headers), errorLog, errorPages);
    if (!isHttp2(req)) return serve(ctx);
    // node:http2 runs this as it reads the stream's HEADERS frame, before a RST_STREAM read with it (rapid reset,
    // CVE-2023-44487): a turn later such a stream is closed, and costs its log lines only, no pass.
    setImmediate(() => (responseGone(res) ? requestEnded(ctx) : serve(ctx)));
  }

  function serve(ctx: RequestContext): void {
    const { req, res } = ctx;
    const openEntry = open.add(res);
    if (!res.socket) closeWithConnection(req.socket, res);
    watchBody(ctx);
    res.once('close', () => requestEnded(ctx, openEntry));
    const current = path;
    if (stopping || current.limits.keepAliveTimeout === 0) res.shouldKeepAlive = false;
    res.setHeader('X-Request-Id', ctx.id);
    if (current.serverBanner !== undefined) res.setHeader('Server', current.serverBanner);
    for (const pass of current.passes) if (pass(ctx)) return;
  }

  function requestEnded(ctx: RequestContext, openEntry?: InFlightEntry<ServerResponse>): void {
    noteBrokenBody(ctx);
    const bytes = ctx.bodyBytes();
    if (!ctx.quiet || ctx.res.statusCode >= 400) accessLog.record(ctx, bytes);
    requestMetrics.record(ctx.kind, ctx.req.method, ctx.res.statusCode, (performance.now() - ctx.startedAt) / 1000, bytes);
    if (!openEntry) return;
    open.delete(openEntry);
    if (open.size === 0) onIdle?.();
  }

  const openConnections = async () => (await Promise.all(servers.map(connectionsOf))).reduce((sum, count) => sum + count, 0);
  const metrics = async (): Promise<MetricJson[]> =>
    processMetricsJson(
      requestMetrics,
      { startedAt, inFlight: open.size, connections: await openConnections(), resetFloodGoaways: resetFlood.goaways() },
      path.upstreams,
    );
  const shares = everyShare ?? (async () => [await metrics()]);
  const files = staticFiles(join(www, 'public'), staticCache);
  const redirectPass = httpsRedirectPass({
    enabled: () => redirect,
    // A plain request can come before the HTTPS listener is bound (start-up).
    tlsPort: () => (tlsServer?.address() as AddressInfo | null)?.port,
  });

  function requestPath(next: RequestPathOptions): RequestPath {
    const { upstreams, statusAllow } = next;
    const forwarding = next.createForwarder({
      upstreams,
      upstreamTimeoutMs: next.upstreamTimeoutMs,
      limitRequestBody: next.limits.limitRequestBody,
      markLocalClients,
    });
    /** The request path, in order: each pass answers the request or leaves it to the next (passes/). */
    const passes: Pass[] = [
      framingPass(next.limits),
      redirectPass,
      bodyLimitsPass(next.limits),
      routePass,
      statusPagesPass({
        serverStatus: serverStatus({ shares, upstreams, allow: statusAllow }),
        metrics: metricsEndpoint({ processes: shares, upstreams, allow: statusAllow }),
      }),
      probesPass(upstreams),
      filesPass(files, compression),
      forwardPass(forwarding.forward, compression),
    ];
    return { passes, forwarding, limits: next.limits, upstreams, serverBanner: next.serverBanner };
  }
  let path = requestPath(options);
  // Node's own field limit drops the fields past it silently, Host among them when it comes last (then
  // Node answers a bare 400 itself): keep every field, which maxHeaderSize bounds, and count them above.
  server.maxHeadersCount = 0;
  capConnections(servers, () => path.limits.maxConnections, errorLog);
  const refusals = connectionRefusals({
    errorLog,
    accessLog,
    requestMetrics,
    serverBanner: () => path.serverBanner,
    answerHttp2Connect: handleRequest,
  });
  for (const listener of servers) {
    // A request Node's parser rejects never reaches the handler. (HTTP/1.1 over TLS is parsed by the same code.)
    listener.on('clientError', refusals.refuseUnparsed);
    // CONNECT (RFC 9110 §9.3.6) asks for a tunnel; this is no forward proxy.
    listener.on('connect', refusals.refuseTunnel);
  }

  let stopped: Promise<void> | undefined;
  function stop(graceMs: number, retire = false): Promise<void> {
    stopped ??= drain(graceMs, retire);
    if (!retire) {
      server.closeIdleConnections();
      for (const socket of tlsHttp1Sockets) if (!answeringOn(socket)) socket.destroy();
    }
    return stopped;
  }

  async function drain(graceMs: number, retire: boolean): Promise<void> {
    stopping = true;
    for (const res of open) if (!res.headersSent) res.shouldKeepAlive = false;
    const idle = new Promise<void>((resolve) => {
      onIdle = resolve;
      if (open.size === 0) resolve();
    });
    // A listener's 'close' comes once its last connection has ended.
    const ended = retire ? servers.map((listener) => once(listener, 'close')) : [];
    // node:http's close() also cuts idle keep-alive connections, racing a request a client may be sending on
    // one; a retiring worker lets each end after its next answer (`Connection: close`) or its keep-alive timeout.
    for (const listener of servers)
      if (retire) NetServer.prototype.close.call(listener);
      else listener.close();
    // GOAWAY: each session ends when its open streams have (RFC 9113 §6.8).
    for (const session of sessions) session.close();
    const grace = setTimeout(() => {
      server.closeAllConnections();
      for (const session of sessions) session.destroy();
      for (const socket of tlsHttp1Sockets) socket.destroy();
    }, graceMs);
    await idle;
    await Promise.all(ended);
    clearTimeout(grace);
  }

  function reloadTls(next: TlsOptions): void {
    tlsServer?.setSecureContext({ ...TLS_DEFAULTS, ...next.pair });
    redirect = next.redirect;
  }

  function reload(next: RequestPathOptions): void {
    const old = path;
    next.upstreams.countOn(old.upstreams);
    path = requestPath(next);
    const { limits: nextLimits } = next;
    // Node reads these from the server for each connection (parser, keep-alive wait, the deadline checks).
    Object.assign(server, http1Limits(nextLimits));
    if (tlsServer) {
      Object.assign(tlsServer, http1Limits(nextLimits));
      tlsServer.setTimeout(Math.max(nextLimits.keepAliveTimeout, nextLimits.requestTimeout) * 1000);
      tlsServer.updateSettings({
        maxConcurrentStreams: nextLimits.h2MaxConcurrentStreams,
        maxHeaderListSize: nextLimits.maxHeaderSize * 2,
      });
    }
    old.forwarding.retire();
  }

  /** --metrics-port's answer: the same figures as the public port's /metrics, with the current upstreams. */
  const scrape = () => scrapeMetrics({ processes: shares, upstreams: path.upstreams });

  return { server, tlsServer, stop, metrics, scrape, reloadTls, reload };
}

function connectionsOf(listener: Server | Http2SecureServer): Promise<number> {
  return new Promise((resolve) => listener.getConnections((err, count) => resolve(err ? 0 : count)));
}
