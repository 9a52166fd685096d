// The web-server role: every request gets an id and an access-log line, then is either forwarded to
// the host (/External/…) or answered from www/public.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { BlockList, Socket } from 'node:net';
import { join } from 'node:path';
import type { ProxyConfig } from '../common/settings.ts';
import type { Forward, ForwarderOptions } from './forwarding.ts';
import type { Tally } from './workerMessages.ts';
import type { AccessLog } from './accessLog.ts';
import { encodeResponse, negotiateRequest, type CompressionSettings } from './compression.ts';
import { errorPage, reasonOf, sendErrorPage } from './errorPages.ts';
import { clientOf, type ErrorLog } from './errorLog.ts';
import { requestIdOf } from './requestId.ts';
import { routeRequest } from './route.ts';
import { ProxyCounters, serverStatus } from './serverStatus.ts';
import type { StaticCache } from './staticCache.ts';
import { staticFiles } from './staticFiles.ts';
import type { Upstreams } from './upstreams.ts';

/** The proxy's timeouts and limits against slow or hostile clients, as configured. */
export type ClientLimits = Pick<
  ProxyConfig,
  'headerTimeout' | 'requestTimeout' | 'keepAliveTimeout' | 'maxHeaderSize' | 'maxHeaderFields' | 'maxConnections' | 'limitRequestBody'
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
  /** Every worker's tally, when this process is one of several (--proxy-workers): /server-status sums them. */
  tallies?: () => Promise<Tally[]>;
  /** The codings --compression allows; a SIGHUP may change them while the server runs. */
  compression: CompressionSettings;
}

export interface ProxyServer {
  server: Server;
  /**
   * Graceful stop: no new connections, `Connection: close` on every answer from now on (keep-alive
   * clients would otherwise go on sending), and resolves when every response has ended, or were cut
   * after `graceMs`, so the access log has a line for each before it is drained.
   */
  stop: (graceMs: number) => Promise<void>;
  /** This process's share of /server-status. */
  tally: () => Promise<Tally>;
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
function framingProblem(req: IncomingMessage): { status: number; message: string } | undefined {
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
  tallies,
  compression,
}: ProxyOptions): ProxyServer {
  const forward = createForwarder({ upstreams, errorLog, upstreamTimeoutMs, limitRequestBody: limits.limitRequestBody });
  const serveStatic = staticFiles(join(www, 'public'), errorLog, staticCache);

  const open = new Set<ServerResponse>();
  const counters = new ProxyCounters();
  let stopping = false;
  let onIdle: (() => void) | undefined;

  const server = createServer(
    {
      // Apache's defaults (common/settings.ts): RequestReadTimeout header=20, Timeout 60,
      // KeepAliveTimeout 5 (below the host's 75 s, host/app.ts). A client past a deadline gets 408 and is cut.
      // 0 turns keep-alive off (nginx keepalive_timeout 0; handleRequest below): to Node it would mean never time out.
      keepAliveTimeout: limits.keepAliveTimeout * 1000,
      headersTimeout: limits.headerTimeout * 1000,
      requestTimeout: limits.requestTimeout * 1000,
      connectionsCheckingInterval: Math.min(DEADLINE_CHECK_MS, limits.headerTimeout * 250),
      // Past it Node's parser fails with HPE_HEADER_OVERFLOW: 431 (the clientError handler below).
      maxHeaderSize: limits.maxHeaderSize,
      // A request without Host is refused by framingProblem(), with Apache's page and an access-log line.
      requireHostHeader: false,
    },
    function handleRequest(req: IncomingMessage, res: ServerResponse) {
      const arrivedAt = Date.now();
      const url = req.url ?? '-';
      const remoteAddress = req.socket.remoteAddress;
      open.add(res);
      if (!res.socket) closeWithConnection(req.socket, res);
      res.once('close', () => {
        accessLog.record(req, res, url, arrivedAt, remoteAddress);
        counters.record(req, res);
        open.delete(res);
        if (open.size === 0) onIdle?.();
      });
      if (stopping || limits.keepAliveTimeout === 0) res.shouldKeepAlive = false;
      const requestId = requestIdOf(req);
      res.setHeader('X-Request-Id', requestId);
      const framing = framingProblem(req);
      if (framing) {
        errorLog.write({
          module: 'core',
          level: 'info',
          client: clientOf(req.socket),
          message: framing.message,
          requestId,
        });
        res.shouldKeepAlive = false;
        return sendErrorPage(res, framing.status);
      }
      // Apache refuses a request over LimitRequestFields; Node has no such refusal (see maxHeadersCount below).
      if (req.rawHeaders.length / 2 > limits.maxHeaderFields) {
        errorLog.write({
          module: 'core',
          level: 'info',
          client: clientOf(req.socket),
          message: `request failed: the number of request header fields exceeds this server's limit (${limits.maxHeaderFields})`,
          requestId,
        });
        res.shouldKeepAlive = false;
        return sendErrorPage(res, 400);
      }
      // LimitRequestBody, for a declared length; forwarding counts a chunked body as it passes (forwarding.ts).
      const declared = req.headers['content-length'];
      if (limits.limitRequestBody > 0 && declared !== undefined && Number(declared) > limits.limitRequestBody) {
        errorLog.write({
          module: 'http',
          level: 'info',
          client: clientOf(req.socket),
          message: `AH01588: Requested content-length of ${declared} is larger than the configured limit of ${limits.limitRequestBody}`,
          requestId,
        });
        res.shouldKeepAlive = false;
        return sendErrorPage(res, 413);
      }
      const route = routeRequest(req.url ?? '');
      switch (route.kind) {
        case 'forward': {
          const negotiated = negotiateRequest(req, compression);
          if (negotiated) encodeResponse(req, res, negotiated, { flushEachTurn: true });
          return forward(req, res, route.url, requestId);
        }
        case 'static':
          return serveStatic(req, res, route.path, requestId, negotiateRequest(req, compression));
        case 'status':
          return void handleServerStatus(req, res, route.query, requestId).catch((err: Error) => {
            errorLog.write({
              module: 'status',
              level: 'error',
              client: clientOf(req.socket),
              message: `/server-status failed: ${err.message}`,
              requestId,
            });
            if (res.headersSent) res.destroy();
            else sendErrorPage(res, 500);
          });
        case 'bad-request':
          errorLog.write({
            module: 'core',
            level: 'info',
            client: clientOf(req.socket),
            message: `Invalid request target ${JSON.stringify(req.url)}`,
            requestId,
          });
          return sendErrorPage(res, route.status);
      }
    },
  );

  const tally = async (): Promise<Tally> => ({
    startedAt: counters.startedAt.toISOString(),
    requests: counters.requests,
    bytes: counters.bytes,
    statuses: { ...counters.statuses },
    inFlight: open.size,
    connections: await new Promise<number>((resolve) => server.getConnections((err, count) => resolve(err ? 0 : count))),
  });
  const handleServerStatus = serverStatus({ tallies: tallies ?? (async () => [await tally()]), upstreams, allow: statusAllow, errorLog });
  // Node's own field limit drops the fields past it silently, Host among them when it comes last (then
  // Node answers a bare 400 itself): keep every field, which maxHeaderSize bounds, and count them above.
  server.maxHeadersCount = 0;
  // A cap keeps file descriptors for the host and the logs under a flood (0 = no cap). Counted here, not
  // with Node's server.maxConnections: in a cluster worker (--proxy-workers) Node does not refuse a
  // connection past that cap but queues it in the primary until the worker has room, and Node 21 and
  // later read maxConnections 0 as "refuse all".
  let connections = 0;
  let dropped = 0;
  if (limits.maxConnections > 0) server.on('connection', countConnection);
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
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    errorLog.write({ module: 'core', level: 'info', client: clientOf(socket), message: `Bad request: ${err.code ?? ''} ${err.message}` });
    const answering = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
    // Bytes after a `Connection: close` request are never parsed (so never served), but the request before
    // them deserves its answer; that response closes the connection itself.
    if (err.code === 'HPE_CLOSED_CONNECTION' && answering && socket.writable) return;
    // A 400 written while an earlier pipelined request is still being answered would be read as that
    // answer: cut the connection instead (as Node's own handler does once bytes went out).
    if (err.code === 'ECONNRESET' || !socket.writable || answering || socket.bytesWritten > 0) {
      socket.destroy();
      return;
    }
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const bytes = answerAndClose(socket, status);
    accessLog.recordRefused(socket.remoteAddress, requestLineOf((err as ParserError).rawPacket), status, bytes);
  });

  // CONNECT (RFC 9110 §9.3.6) asks for a tunnel; this is no forward proxy. Node would drop the connection
  // without a word: answer 405 as Apache without mod_proxy_connect does, and log it.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    errorLog.write({
      module: 'core',
      level: 'info',
      client: clientOf(socket),
      message: `Method CONNECT not allowed for ${JSON.stringify(req.url)}`,
    });
    socket.on('error', () => {}); // the client may be gone already
    const bytes = answerAndClose(socket, 405, 'Allow: GET, HEAD\r\n');
    accessLog.recordRefused(socket.remoteAddress, `CONNECT ${req.url ?? ''} HTTP/${req.httpVersion}`, 405, bytes);
  });

  /**
   * Writes Apache's page for `status` straight to a socket Node's server no longer answers on, then closes
   * it; returns the page's length (the access log's %b).
   */
  function answerAndClose(socket: Socket, status: number, extraHeaders = ''): number {
    const page = errorPage(status);
    const head =
      `HTTP/1.1 ${status} ${reasonOf(status)}\r\n${extraHeaders}` +
      `Content-Type: text/html; charset=iso-8859-1\r\nContent-Length: ${page.length}\r\nConnection: close\r\n\r\n`;
    socket.end(Buffer.concat([Buffer.from(head, 'latin1'), page]));
    return page.length;
  }

  async function stop(graceMs: number): Promise<void> {
    stopping = true;
    for (const res of open) if (!res.headersSent) res.shouldKeepAlive = false;
    const idle = new Promise<void>((resolve) => {
      onIdle = resolve;
      if (open.size === 0) resolve();
    });
    server.close();
    server.closeIdleConnections();
    const grace = setTimeout(() => server.closeAllConnections(), graceMs);
    await idle;
    clearTimeout(grace);
  }

  return { server, stop, tally };
}
