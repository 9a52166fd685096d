// The web-server role: every request gets an id and an access-log line, then is either forwarded to
// the host (/External/…) or answered from www/public.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  constants as http2Constants,
  createSecureServer,
  type Http2SecureServer,
  type Http2ServerResponse,
  type Http2Session,
} from 'node:http2';
import { Server as NetServer, isIP, type AddressInfo, type BlockList, type Socket } from 'node:net';
import { once } from 'node:events';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { statusOfParserError } from '../common/protocol.ts';
import type { ProxyConfig } from '../common/settings.ts';
import type { Forward, ForwarderOptions } from './forwarding.ts';
import { bodyBytes, type AccessLog } from './accessLog.ts';
import { encodeResponse, negotiateRequest, type CompressionSettings } from './compression.ts';
import { errorPage, reasonOf, sendErrorPage } from './errorPages.ts';
import { clientOf, clientOfRequest, rememberClient, type ErrorLog } from './errorLog.ts';
import { authorityOf, bodyFollows, isHttp2 } from './protocols.ts';
import { closeAtOnce, isLingering, lingerAfterEarlyAnswer } from './lingeringClose.ts';
import { KIND, metricsEndpoint, processMetricsJson, RequestMetrics, type MetricJson, type RouteKind } from './metrics.ts';
import { requestIdOf } from './requestId.ts';
import { routeRequest } from './route.ts';
import { serverStatus } from './serverStatus.ts';
import type { StaticCache } from './staticCache.ts';
import { staticFiles } from './staticFiles.ts';
import { TLS_DEFAULTS, type TlsOptions } from './tls.ts';
import type { Upstreams } from './upstreams.ts';

/** The proxy's timeouts and limits against slow or hostile clients, as configured. */
export type ClientLimits = Pick<
  ProxyConfig,
  | 'headerTimeout'
  | 'requestTimeout'
  | 'keepAliveTimeout'
  | 'maxHeaderSize'
  | 'maxHeaderFields'
  | 'maxConnections'
  | 'limitRequestBody'
  | 'h2MaxConcurrentStreams'
>;

export interface ProxyOptions {
  www: string;
  upstreams: Upstreams;
  /** 0 = wait for the host's headers as long as it takes. */
  upstreamTimeoutMs: number;
  /** The chosen engine's constructor (main.ts loads only that one). */
  createForwarder: (options: ForwarderOptions) => Forward;
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
  /** `extqs dev`: the host is told which clients are on loopback (proxy/forwarding.ts). */
  markLocalClients?: boolean;
  /** The Server field of every answer (--server-tokens); absent sends none. */
  serverBanner?: string;
}

export interface ProxyServer {
  server: Server;
  /** The HTTPS listener, when `tls` was given (not listening yet, as `server`). */
  tlsServer?: Http2SecureServer;
  /** A SIGHUP's TLS settings: the pair read again (new handshakes use it) and the redirect. */
  reloadTls: (tls: TlsOptions) => void;
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
}

/** Node's parser error: the bytes it had of the request it refused. */
type ParserError = NodeJS.ErrnoException & { rawPacket?: Buffer };

/** Apache's %r for a refused request: its first line as it came, at most LimitRequestLine (8190) bytes. */
function requestLineOf(rawPacket: Buffer | undefined): string {
  if (!rawPacket) return '';
  const head = rawPacket.subarray(0, 8190).toString('latin1');
  return head.split(/\r?\n/, 1)[0];
}

/** What llhttp lets through but this server refuses, before anything reads the body; the error.log message. */
function framingProblem(req: IncomingMessage, maxHeaderSize: number): { status: number; message: string } | undefined {
  if (isHttp2(req)) return headerListProblem(req, maxHeaderSize);
  const target = JSON.stringify(req.url);
  // llhttp also parses `HTTP/2.0` and HTTP/0.9 request lines (a CR LF injected into a target makes one).
  if (req.httpVersionMajor !== 1) return { status: 505, message: `Unsupported HTTP version ${req.httpVersion} in ${target}` };
  // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 request is faulty framing (nginx and Apache answer 400).
  if (req.httpVersionMinor === 0 && req.headers['transfer-encoding'] !== undefined) {
    return { status: 400, message: `Transfer-Encoding in an HTTP/1.0 request in ${target}` };
  }
  // RFC 9112 §3.2. Node would answer this itself (requireHostHeader) before the request reaches the
  // handler: an empty body and no access-log line. Apache answers its page and logs both.
  if (req.httpVersionMinor === 1 && req.headers.host === undefined) {
    return { status: 400, message: `AH00569: client sent HTTP/1.1 request without hostname (see RFC7230 section 5.4): ${req.url ?? ''}` };
  }
  return undefined;
}

/**
 * --max-header-size for an HTTP/2 request, counted as SETTINGS_MAX_HEADER_LIST_SIZE counts (RFC 9113
 * §6.5.2: name, value and 32 bytes a field), pseudo-fields included. Node's own limit is set above it
 * (createProxyServer) and resets the stream without a word; this answers 431 and logs, as for HTTP/1.1.
 */
function headerListProblem(req: IncomingMessage, maxHeaderSize: number): { status: number; message: string } | undefined {
  let size = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) size += raw[i].length + raw[i + 1].length + 32;
  if (size <= maxHeaderSize) return undefined;
  return { status: 431, message: `HTTP/2 header list of ${size} bytes is larger than the limit of ${maxHeaderSize}` };
}

/**
 * How often Node looks for connections past --header-timeout or --request-timeout (its default, 30 s,
 * would let a slowloris connection outlive a 20 s limit by half a minute).
 */
const DEADLINE_CHECK_MS = 1_000;
/** Connections refused past --max-connections are logged as one line per this interval, not one each. */
const DROP_REPORT_MS = 10_000;

/**
 * Responses queued behind an earlier pipelined one have no socket yet, and Node never closes them when
 * the connection dies (it destroys only their requests: _http_server.js abortIncoming). They are closed
 * here then, so each gets its access-log line, the engine aborts its upstream request, and a stop does
 * not wait for them. One listener a connection, however deep the pipeline.
 */
const queuedOn = new WeakMap<Socket, Set<ServerResponse>>();

/** A request whose body the parser is reading, and how to stop forwarding it (forward() says). */
interface BodyInFlight {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  drop?: () => void;
}

/** The last request with a body on each HTTP/1.1 connection: a parser error while it is incomplete is in its body. */
const readingBody = new WeakMap<Socket, BodyInFlight>();
/** Requests whose body failed and was logged and answered (refuseBody), and their connections. */
const refusedBodies = new WeakSet<IncomingMessage>();
const refusedSockets = new WeakSet<Socket>();

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

export function createProxyServer({
  www,
  upstreams,
  upstreamTimeoutMs,
  createForwarder,
  staticCache,
  accessLog,
  errorLog,
  statusAllow,
  limits,
  tls,
  everyShare,
  compression,
  markLocalClients = false,
  serverBanner,
}: ProxyOptions): ProxyServer {
  const forward = createForwarder({ upstreams, errorLog, upstreamTimeoutMs, limitRequestBody: limits.limitRequestBody, markLocalClients });
  const serveStatic = staticFiles(join(www, 'public'), errorLog, staticCache);

  const open = new Set<ServerResponse>();
  const startedAt = new Date();
  const requestMetrics = new RequestMetrics();
  let stopping = false;
  let onIdle: (() => void) | undefined;

  const server = createServer(
    {
      // Apache's defaults (common/settings.ts): RequestReadTimeout header=20, Timeout 60,
      // KeepAliveTimeout 5 (below the host's 75 s, host/app.ts). A client past a deadline gets 408 and is cut.
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
      maxHeaderListPairs: (limits.maxHeaderFields + 4) * 2,
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
      sessions.add(session);
      session.once('close', () => sessions.delete(session));
      if (stopping) session.close();
    });
    tlsServer.on('secureConnection', (socket: TLSSocket) => {
      if (socket.alpnProtocol === 'h2') return;
      tlsHttp1Sockets.add(socket);
      socket.once('close', () => tlsHttp1Sockets.delete(socket));
    });
    tlsServer.on('sessionError', (err: NodeJS.ErrnoException) => {
      errorLog.write({ module: 'http2', level: 'info', message: `HTTP/2 session failed: ${err.code ?? ''} ${err.message}` });
    });
    servers.push(tlsServer);
  }

  function handleRequest(req: IncomingMessage, res: ServerResponse): void {
    // Bytes after a body read only to be dropped, on a connection answered `Connection: close`: not served.
    if (!isHttp2(req) && isLingering(req.socket)) return void req.socket.destroy();
    const arrivedAt = Date.now();
    const startedAt = performance.now(); // monotonic, for the duration; arrivedAt is the access log's %t
    let kind: RouteKind = KIND.refused; // until the route says otherwise
    const url = req.url ?? '-';
    const remoteAddress = req.socket.remoteAddress;
    rememberClient(req);
    open.add(res);
    if (!res.socket) closeWithConnection(req.socket, res);
    const withBody = bodyFollows(req);
    if (withBody) lingerAfterEarlyAnswer(req, res);
    // An HTTP/2 request is `complete` once its stream closes, however it closed: its end is watched instead.
    let bodyEnded = false;
    if (withBody) req.once('end', () => (bodyEnded = true));
    res.once('close', () => {
      if (withBody && !res.headersSent && !refusedBodies.has(req) && !(isHttp2(req) ? bodyEnded : req.complete)) {
        bodyBrokeOff(req, res, requestId);
      }
      const bytes = bodyBytes(req, res);
      accessLog.record(req, res, url, arrivedAt, remoteAddress, bytes);
      requestMetrics.record(kind, req.method, res.statusCode, (performance.now() - startedAt) / 1000, bytes);
      open.delete(res);
      if (open.size === 0) onIdle?.();
    });
    if (stopping || limits.keepAliveTimeout === 0) res.shouldKeepAlive = false;
    const requestId = requestIdOf(req);
    res.setHeader('X-Request-Id', requestId);
    if (serverBanner !== undefined) res.setHeader('Server', serverBanner);
    if (withBody && !isHttp2(req)) readingBody.set(req.socket, { req, res, requestId });
    const framing = framingProblem(req, limits.maxHeaderSize);
    if (framing) {
      errorLog.write({
        module: 'core',
        level: 'info',
        client: clientOfRequest(req),
        message: framing.message,
        requestId,
      });
      res.shouldKeepAlive = false;
      return sendErrorPage(res, framing.status);
    }
    // Apache refuses a request over LimitRequestFields; Node has no such refusal (see maxHeadersCount below).
    // HTTP/2's four pseudo-fields are the request line's parts, not fields.
    if (req.rawHeaders.length / 2 - (isHttp2(req) ? 4 : 0) > limits.maxHeaderFields) {
      errorLog.write({
        module: 'core',
        level: 'info',
        client: clientOfRequest(req),
        message: `request failed: the number of request header fields exceeds this server's limit (${limits.maxHeaderFields})`,
        requestId,
      });
      res.shouldKeepAlive = false;
      return sendErrorPage(res, 400);
    }
    // ACME's HTTP-01 challenges stay on plain HTTP, as certbot's own nginx and Apache configurations leave them.
    if (redirect && !isHttp2(req) && !(req.socket as TLSSocket).encrypted && !req.url?.startsWith(ACME_CHALLENGE)) {
      return redirectToHttps(req, res, requestId);
    }
    // LimitRequestBody, for a declared length; forwarding counts a chunked body as it passes (forwarding.ts).
    const declared = req.headers['content-length'];
    if (limits.limitRequestBody > 0 && declared !== undefined && Number(declared) > limits.limitRequestBody) {
      errorLog.write({
        module: 'http',
        level: 'info',
        client: clientOfRequest(req),
        message: `AH01588: Requested content-length of ${declared} is larger than the configured limit of ${limits.limitRequestBody}`,
        requestId,
      });
      res.shouldKeepAlive = false;
      return sendErrorPage(res, 413);
    }
    if (isHttp2(req) && bodyFollows(req)) bodyDeadline(req, res, arrivedAt, requestId);
    const route = routeRequest(req.url ?? '');
    switch (route.kind) {
      case 'forward': {
        kind = KIND.controller;
        const negotiated = negotiateRequest(req, compression);
        if (negotiated) encodeResponse(req, res, negotiated, { flushEachTurn: true });
        const drop = forward(req, res, route.url, requestId);
        const reading = readingBody.get(req.socket);
        if (reading?.req === req) reading.drop = drop;
        return;
      }
      case 'static':
        kind = KIND.static;
        return serveStatic(req, res, route.path, requestId, negotiateRequest(req, compression));
      case 'status':
        kind = KIND.status;
        return void handleServerStatus(req, res, route.query, requestId).catch((err: Error) =>
          pageFailed(req, res, '/server-status', requestId, err),
        );
      case 'metrics':
        kind = KIND.metrics;
        return void handleMetrics(req, res, requestId).catch((err: Error) => pageFailed(req, res, '/metrics', requestId, err));
      case 'encoded-slash':
        kind = KIND.static;
        // Apache's words (request.c), with the target as sent, as its r->unparsed_uri.
        errorLog.write({
          module: 'core',
          level: 'info',
          client: clientOfRequest(req),
          message: `AH00026: found %2f (encoded '/') in URI path (${req.url}), returning 404`,
          requestId,
        });
        return sendErrorPage(res, 404);
      case 'bad-request':
        // A path above the root is a traversal probe, an error to Apache (AH10244); the rest is S2.
        errorLog.write({
          module: 'core',
          level: route.aboveRoot ? 'error' : 'info',
          client: clientOfRequest(req),
          message: route.aboveRoot ? `AH10244: invalid URI path (${req.url})` : `Invalid request target ${JSON.stringify(req.url)}`,
          requestId,
        });
        return sendErrorPage(res, route.status);
    }
  }

  /**
   * A request whose body did not arrive whole and that got no answer (a client that left mid-body, an
   * HTTP/2 stream reset, a body shorter than its length): logged 400, as Apache logs a body it failed to
   * read, never the 200 a response starts with.
   */
  function bodyBrokeOff(req: IncomingMessage, res: ServerResponse, requestId: string): void {
    res.statusCode = 400;
    const stream = isHttp2(req) ? (res as unknown as Http2ServerResponse).stream : undefined;
    errorLog.write({
      module: 'core',
      level: 'info',
      client: clientOfRequest(req),
      message: `Request body incomplete: ${stream ? `the stream was reset (RST_STREAM ${stream.rstCode ?? '-'})` : 'the connection closed'} before it ended`,
      requestId,
    });
  }

  /** A page about the server that failed: logged, and a 500 unless it began to answer. */
  function pageFailed(req: IncomingMessage, res: ServerResponse, page: string, requestId: string, err: Error): void {
    errorLog.write({
      module: 'status',
      level: 'error',
      client: clientOfRequest(req),
      message: `${page} failed: ${err.message}`,
      requestId,
    });
    if (res.headersSent) res.destroy();
    else sendErrorPage(res, 500);
  }

  const openConnections = async () => (await Promise.all(servers.map(connectionsOf))).reduce((sum, count) => sum + count, 0);
  const metrics = async (): Promise<MetricJson[]> =>
    processMetricsJson(requestMetrics, { startedAt, inFlight: open.size, connections: await openConnections() }, upstreams);
  const shares = everyShare ?? (async () => [await metrics()]);
  const handleServerStatus = serverStatus({ shares, upstreams, allow: statusAllow, errorLog });
  const handleMetrics = metricsEndpoint({ processes: shares, upstreams, allow: statusAllow, errorLog });
  // Node's own field limit drops the fields past it silently, Host among them when it comes last (then
  // Node answers a bare 400 itself): keep every field, which maxHeaderSize bounds, and count them above.
  server.maxHeadersCount = 0;
  // A cap keeps file descriptors for the host and the logs under a flood (0 = no cap). Counted here, not
  // with Node's server.maxConnections: in a cluster worker (--proxy-workers) Node does not refuse a
  // connection past that cap but queues it in the primary until the worker has room, and Node 21 and
  // later read maxConnections 0 as "refuse all".
  let connections = 0;
  let dropped = 0;
  if (limits.maxConnections > 0) for (const listener of servers) listener.on('connection', countConnection);
  function countConnection(socket: Socket): void {
    if (connections >= limits.maxConnections) {
      socket.destroy();
      reportDrop();
      return;
    }
    connections += 1;
    socket.once('close', () => (connections -= 1));
  }
  function reportDrop(): void {
    if (dropped++ > 0) return;
    setTimeout(() => {
      errorLog.write({
        module: 'mpm_event',
        level: 'error',
        message: `server reached --max-connections (${limits.maxConnections}): ${dropped} connection(s) refused in the last ${DROP_REPORT_MS / 1000} s`,
      });
      dropped = 0;
    }, DROP_REPORT_MS).unref();
  }

  // A request Node's parser rejects never reaches the handler: answer 400 as Apache does, and log it.
  // (HTTP/1.1 over TLS is parsed by the same code, which tells the HTTPS listener.)
  for (const listener of servers) listener.on('clientError', refuseUnparsed);
  function refuseUnparsed(err: NodeJS.ErrnoException, socket: Socket): void {
    // node:http2 passes TLS handshake failures on as client errors (a scanner, an old client): Apache logs
    // them at info (mod_ssl AH02008), and there is no HTTP to answer with.
    if (err.code?.startsWith('ERR_SSL_') || err.code?.startsWith('ERR_TLS_')) {
      errorLog.write({ module: 'ssl', level: 'info', client: clientOf(socket), message: `SSL handshake failed: ${err.message.trim()}` });
      socket.destroy();
      return;
    }
    if (refusedSockets.has(socket)) return; // its request's failure is logged and answered already
    // A body being dropped after its answer, past --request-timeout or malformed: the lingering ends.
    if (isLingering(socket)) return void socket.destroy();
    const reading = readingBody.get(socket);
    if (reading && !reading.req.complete && !reading.res.writableEnded) {
      // The client closed its side mid-body: it left, the body is not malformed. Cut as a client that left:
      // the request's close logs F5 (bodyBrokeOff), and the engine's abort ends the host's body early.
      if (err.code === 'HPE_INVALID_EOF_STATE') return void socket.destroy();
      return refuseBody(reading, err, socket);
    }
    errorLog.write({ module: 'core', level: 'info', client: clientOf(socket), message: `Bad request: ${err.code ?? ''} ${err.message}` });
    const answering = answeringOn(socket);
    // Bytes after a `Connection: close` request are never parsed (so never served), but the request before
    // them deserves its answer; that response closes the connection itself.
    if (err.code === 'HPE_CLOSED_CONNECTION' && answering && socket.writable) return;
    // A 400 written while an earlier pipelined request is still being answered would be read as that
    // answer: cut the connection instead (as Node's own handler does once bytes went out).
    if (err.code === 'ECONNRESET' || !socket.writable || answering || socket.bytesWritten > 0) {
      socket.destroy();
      return;
    }
    const status = statusOfParserError(err.code);
    const bytes = answerAndClose(socket, status);
    accessLog.recordRefused(socket.remoteAddress, requestLineOf((err as ParserError).rawPacket), status, bytes);
    requestMetrics.count(KIND.refused, undefined, status, bytes);
  }

  /**
   * The parser failed inside a request's body (a chunk line without CR, a trailer with Content-Length, a
   * body past --request-timeout; not the connection ending, a client that left): that request gets the
   * status, as Apache answers a body it cannot read (400, or 408), and the connection closes. Its forwarding
   * stops. The page goes out when this request is the one being answered and nothing of its answer has;
   * otherwise the connection is cut, and its access line still has the status.
   */
  function refuseBody(reading: BodyInFlight, err: NodeJS.ErrnoException, socket: Socket): void {
    const { req, res } = reading;
    errorLog.write({
      module: 'core',
      level: 'info',
      client: clientOfRequest(req),
      message: `Bad request: ${err.code ?? ''} ${err.message}`,
      requestId: reading.requestId,
    });
    refusedBodies.add(req);
    refusedSockets.add(socket);
    closeAtOnce(socket); // a body the parser failed in, or too slow: not read on after the answer
    reading.drop?.();
    const status = statusOfParserError(err.code);
    if (res.headersSent) return void socket.destroy();
    if (answeringOn(socket) !== res || !socket.writable) {
      res.statusCode = status;
      return void socket.destroy();
    }
    res.shouldKeepAlive = false;
    sendErrorPage(res, status);
  }

  // CONNECT (RFC 9110 §9.3.6) asks for a tunnel; this is no forward proxy. Node would drop the connection
  // without a word: answer 405 as Apache without mod_proxy_connect does, and log it.
  for (const listener of servers) listener.on('connect', refuseTunnel);
  function refuseTunnel(req: IncomingMessage, socket: Socket): void {
    // HTTP/2's CONNECT (RFC 9113 §8.5) comes here too, with a response for a socket: answered as any request.
    if (isHttp2(req)) return handleRequest(req, socket as unknown as ServerResponse);
    errorLog.write({
      module: 'core',
      level: 'info',
      client: clientOf(socket),
      message: `Method CONNECT not allowed for ${JSON.stringify(req.url)}`,
    });
    socket.on('error', () => {}); // the client may be gone already
    const bytes = answerAndClose(socket, 405, 'Allow: GET, HEAD\r\n');
    accessLog.recordRefused(socket.remoteAddress, `CONNECT ${req.url ?? ''} HTTP/${req.httpVersion}`, 405, bytes);
    requestMetrics.count(KIND.refused, 'CONNECT', 405, bytes);
  }

  /**
   * Writes Apache's page for `status` straight to a socket Node's server no longer answers on, then closes
   * it; returns the page's length (the access log's %b).
   */
  const serverField = serverBanner === undefined ? '' : `Server: ${serverBanner}\r\n`;
  function answerAndClose(socket: Socket, status: number, extraHeaders = ''): number {
    const page = errorPage(status);
    const head =
      `HTTP/1.1 ${status} ${reasonOf(status)}\r\n${serverField}${extraHeaders}` +
      `Content-Type: text/html; charset=iso-8859-1\r\nContent-Length: ${page.length}\r\nConnection: close\r\n\r\n`;
    socket.end(Buffer.concat([Buffer.from(head, 'latin1'), page]));
    return page.length;
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

  /**
   * --request-timeout for an HTTP/2 request's body, which node:http2 does not time (node:http does, for
   * HTTP/1.1): past it the stream is answered 408 (and the rest of its body refused), or reset once an
   * answer has begun, and logged.
   */
  function bodyDeadline(req: IncomingMessage, res: ServerResponse, arrivedAt: number, requestId: string): void {
    const timer = setTimeout(
      () => {
        if (req.complete || res.writableEnded) return;
        errorLog.write({
          module: 'reqtimeout',
          level: 'info',
          client: clientOfRequest(req),
          message: `AH01382: Request body read timeout (--request-timeout ${limits.requestTimeout} s)`,
          requestId,
        });
        // Unlike HTTP/1.1, where the late body still fills the connection, the stream can take the answer;
        // then RST_STREAM NO_ERROR tells the client to stop sending (RFC 9113 §8.1), the session going on.
        sendErrorPage(res, 408);
        (res as unknown as Http2ServerResponse).stream.close(http2Constants.NGHTTP2_NO_ERROR);
      },
      Math.max(0, limits.requestTimeout * 1000 - (Date.now() - arrivedAt)),
    );
    const clear = () => clearTimeout(timer);
    req.once('end', clear);
    res.once('close', clear);
  }

  function reloadTls(next: TlsOptions): void {
    tlsServer?.setSecureContext({ ...TLS_DEFAULTS, ...next.pair });
    redirect = next.redirect;
  }

  /**
   * 301 to the same target on HTTPS (nginx `return 301 https://$host$request_uri`). A Host that is no
   * host name or address is not echoed into Location: the address the client reached is used instead.
   */
  function redirectToHttps(req: IncomingMessage, res: ServerResponse, requestId: string): void {
    // A plain request can come before the HTTPS listener is bound (start-up): nowhere to send it yet.
    const tlsPort = (tlsServer?.address() as AddressInfo | null)?.port;
    if (tlsPort === undefined) return sendErrorPage(res, 503);
    const named = authorityOf(req)?.match(HOST_NAME)?.[1];
    const local = req.socket.localAddress ?? '';
    const host = named ?? (isIP(local) === 6 ? `[${local}]` : local);
    errorLog.write({
      module: 'rewrite',
      level: 'debug',
      client: clientOfRequest(req),
      message: `redirect to HTTPS: ${req.url ?? ''}`,
      requestId,
    });
    sendErrorPage(res, 301, { Location: `https://${host}${tlsPort === 443 ? '' : `:${tlsPort}`}${req.url ?? '/'}` });
  }

  return { server, tlsServer, stop, metrics, reloadTls };
}

const ACME_CHALLENGE = '/.well-known/acme-challenge/';

/** A Host field's host name or address, without its port. */
const HOST_NAME = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** The response node:http is writing on an HTTP/1.x connection, if any (its own field; none when idle). */
function answeringOn(socket: Socket): unknown {
  return (socket as Socket & { _httpMessage?: unknown })._httpMessage;
}

function connectionsOf(listener: Server | Http2SecureServer): Promise<number> {
  return new Promise((resolve) => listener.getConnections((err, count) => resolve(err ? 0 : count)));
}

/** node:http's limits for a listener's HTTP/1.x connections (both listeners' HTTP/1.1 is node:http). */
function http1Limits(limits: ClientLimits) {
  return {
    keepAliveTimeout: limits.keepAliveTimeout * 1000,
    headersTimeout: limits.headerTimeout * 1000,
    requestTimeout: limits.requestTimeout * 1000,
    connectionsCheckingInterval: Math.min(DEADLINE_CHECK_MS, limits.headerTimeout * 250),
    // Past it Node's parser fails with HPE_HEADER_OVERFLOW: 431 (the clientError handler).
    maxHeaderSize: limits.maxHeaderSize,
  };
}
