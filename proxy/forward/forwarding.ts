// What every forwarding engine shares besides a request's life (forwardingCore.ts): the header hygiene in
// both directions, and the answers and error-log lines for each way forwarding fails (docs/design.md §5; docs/logs.md, "Log lines").
// The engines (forwardBuiltin.ts, forwardHttpProxy.ts) only move bytes.
import { constants } from 'node:os';
import { fieldTable } from '../../common/nullObject.ts';
import {
  CONTROLLER_ANSWER_FIELD,
  CONTROLLER_FAILED_FIELD,
  CONTROLLER_PREFIX,
  decodeStderr,
  ENDED_WITHOUT_HEADERS_FIELD,
  HOST_STDERR_FIELD,
  LOCAL_CLIENT_FIELD,
  START_BY_FIELD,
  POOL_FULL_FIELD,
} from '../../common/protocol.ts';
import { END_OF_SCRIPT_OUTPUT, HOST_STDERR_PREFIX } from '../core/hostFailureLines.ts';
import { isLoopback } from './loopback.ts';
import { isOutOfDescriptors, outOfDescriptorsLine, watchOpenFilesLimit } from './openFilesLimit.ts';
import { authorityOf, isHttp2, responseGone, schemeOf } from '../core/protocols.ts';
import type { RequestContext } from '../core/requestContext.ts';
import type { Upstreams, UpstreamState } from './upstreams.ts';

/**
 * Sends the request to a host and its answer to `res`. Returns how to drop it: the client's request
 * failed mid-body and the server answers it itself (server.ts), so the host's request is aborted and
 * whatever it answers is ignored.
 */
export type Forward = (ctx: RequestContext, url: string) => () => void;

/** An engine's forwarding, and its end: a reload's new settings get an engine of their own (server.ts). */
export interface Forwarding {
  forward: Forward;
  /**
   * Takes no new request: stops following the hosts' tables and closes each connection to a host once the request
   * on it has ended. What is in flight finishes, another try it needs included.
   */
  retire(): void;
}

export interface ForwarderOptions {
  upstreams: Upstreams;
  /** No response headers within this many ms of the request's end: 504. 0 = wait as long as it takes. */
  upstreamTimeoutMs: number;
  /** LimitRequestBody: a longer body is cut and answered 413. 0 = none. */
  limitRequestBody: number;
  /** `extqs dev`: tell the host which clients are on loopback (LOCAL_CLIENT_FIELD). */
  markLocalClients: boolean;
}

/** Fields Node frames itself in a response to the client (and HTTP/2 forbids from anyone else). */
export const NODE_FRAMED = ['transfer-encoding'] as const;

/**
 * The upstream's idle sockets are dropped after this long; the host keeps them longer (host/worker/app.ts) and
 * never closes one itself while retiring.
 */
export const IDLE_UPSTREAM_SOCKET_MS = 10_000;

/** RFC 9110 §7.6.1: connection-specific fields are never forwarded, in either direction. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'upgrade', 'trailer'] as const;

/**
 * Hop-by-hop fields, the host's signals to this proxy (common/protocol.ts), and `Server`: never passed to
 * a client. This server's own Server field (--server-tokens) replaces a controller's, as Apache's replaces
 * a CGI script's.
 */
const NOT_PASSED_ON = new Set<string>([
  ...HOP_BY_HOP,
  'server',
  HOST_STDERR_FIELD,
  ENDED_WITHOUT_HEADERS_FIELD,
  CONTROLLER_ANSWER_FIELD,
  CONTROLLER_FAILED_FIELD,
  POOL_FULL_FIELD,
]);

const NEVER_FORWARDED = new Set<string>([...HOP_BY_HOP, 'forwarded', 'x-request-id', LOCAL_CLIENT_FIELD, START_BY_FIELD]);

const { errno } = constants;

/** Errors that mean the host could not be reached at all (down or restarting): 503, not 500. */
const CONNECT_ERRORS = new Set([
  'ECONNREFUSED',
  'ENOENT',
  'EACCES',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** strerror()'s text for the socket errors a host's connection meets, as Apache's `(104)Connection reset by peer`. */
const STRERROR: Record<string, string> = {
  ECONNRESET: 'Connection reset by peer',
  EPIPE: 'Broken pipe',
  ECONNABORTED: 'Software caused connection abort',
  EMFILE: 'Too many open files',
  ENFILE: 'Too many open files in system',
};

/** `(<errno>)<text>`, Apache's `%E`, for an error with a system error code. */
function errnoText(err: NodeJS.ErrnoException): string {
  const code = err.code as keyof typeof errno;
  return `(${errno[code]})${STRERROR[code] ?? err.message}`;
}

/**
 * The body stopped short with valid framing: only a cut tells the client (and a cache) it is incomplete. Over
 * HTTP/1.1 the connection is closed once what was written has gone, without the chunked body's last chunk, so the
 * client gets the status and the bytes before the failure (curl: exit 18, never an empty reply); over HTTP/2 the
 * stream is reset, which a client reads as an incomplete answer.
 */
function cutAfterWritten({ req, res }: RequestContext): void {
  if (isHttp2(req) || !res.socket) return void res.destroy();
  // Node 26 holds a chunked response's writes of this tick (its head too) in the response until the next tick:
  // ending the socket now would drop them (curl: empty reply). Uncorking hands them to the socket first.
  for (let corks = res.writableCorked; corks > 0; corks--) res.uncork();
  res.socket.end();
}

/** Nothing reached the host: another upstream may be tried. */
export function isConnectError(err: NodeJS.ErrnoException): boolean {
  return CONNECT_ERRORS.has(err.code ?? '');
}

type Headers = Record<string, string | string[] | undefined>;

const NOTHING_NOMINATED: readonly string[] = [];

/** The field names a Connection field lists (RFC 9110 §7.6.1), lower case. */
function nominatedBy(connection: string | string[] | undefined): readonly string[] {
  if (typeof connection !== 'string') return NOTHING_NOMINATED;
  const names = connection.toLowerCase();
  // What nearly every request and every host response says: nothing to split (both are hop-by-hop anyway).
  if (names === 'keep-alive' || names === 'close') return NOTHING_NOMINATED;
  return names.split(',').map((name) => name.trim());
}

/**
 * The host's response fields for the client: without the hop-by-hop fields, those the Connection field
 * names, and `engineFramed` (what Node frames itself). A fresh object, as for the request below.
 */
export function responseHeaders(headers: Headers, engineFramed: readonly string[] = []): Headers {
  const nominated = nominatedBy(headers.connection);
  const out = fieldTable<string | string[] | undefined>();
  for (const name in headers) {
    if (NOT_PASSED_ON.has(name) || engineFramed.includes(name) || nominated.includes(name)) continue;
    out[name] = headers[name];
  }
  return out;
}

/**
 * What the proxy does with the host's answer (common/protocol.ts): pass it on; answer as if the host had
 * closed before its headers (it says the application ended without them); answer Apache's 500 page for a
 * controller that threw; or answer Apache's page for its status, as the host answered an error itself,
 * not a controller (fastify's JSON never reaches a client).
 */
export type HostAnswer = 'relay' | 'ended-without-headers' | 'controller-failed' | 'host-error' | 'pool-full';

export function hostAnswerOf(statusCode: number, headers: Headers): HostAnswer {
  if (headers[POOL_FULL_FIELD] !== undefined) return 'pool-full';
  if (headers[ENDED_WITHOUT_HEADERS_FIELD] !== undefined) return 'ended-without-headers';
  if (headers[CONTROLLER_FAILED_FIELD] !== undefined) return 'controller-failed';
  if (statusCode >= 400 && headers[CONTROLLER_ANSWER_FIELD] === undefined) return 'host-error';
  return 'relay';
}

/** `Latest` for `/External/Latest`: what an operator greps for. */
function controllerOf(path: string): string {
  // The name ends at the first slash; what follows is the controller's path info (host/controller/controllerRoute.ts).
  return path.slice(CONTROLLER_PREFIX.length).split('/', 1)[0] || '-';
}

// ── the request's header fields ─────────────────────────────────────────────────────────────────

/**
 * The fields sent to the host, as a fresh object (deleting from req.headers would turn it into a slow
 * dictionary-mode object on the hot path). Never forwarded:
 * - hop-by-hop fields and those the Connection field names (RFC 9110 §7.6.1), `Trailer` in particular:
 *   on a GET it makes Node's client throw ERR_HTTP_TRAILER_INVALID inside http-proxy, which crashes the
 *   process (node-http-proxy #1647);
 * - X-Forwarded-* and Forwarded from the client: only this proxy says who the client is (spoofing);
 * - the client's X-Request-Id: the id this proxy chose (kept if well-formed) goes instead;
 * - the client's LOCAL_CLIENT_FIELD: with `markLocalClients` (`extqs dev`) this proxy sets it from the
 *   socket's address, so a remote client cannot claim to be local and see a controller's stack;
 * - `engineFramed`: what the engine frames or refuses itself.
 */
export function forwardedHeaders(
  ctx: RequestContext,
  engineFramed: readonly string[] = [],
  markLocalClients = false,
): Record<string, string | string[]> {
  const { req } = ctx;
  const incoming = req.headers;
  const nominated = nominatedBy(incoming.connection);
  // Field names are the client's words (HTTP/2 passes a `__proto__` field on): no inherited keys.
  const out = fieldTable<string | string[]>();
  for (const name in incoming) {
    const value = incoming[name];
    // HTTP/2's pseudo-header fields (`:path`…) are no fields of the HTTP/1.1 request to the host.
    if (value === undefined || NEVER_FORWARDED.has(name) || name.startsWith('x-forwarded-') || name.startsWith(':')) continue;
    if (nominated.includes(name) || engineFramed.includes(name)) continue;
    out[name] = value;
  }
  const authority = authorityOf(req);
  if (authority !== undefined) out.host = authority;
  out['x-forwarded-for'] = ctx.clientAddress;
  out['x-forwarded-proto'] = schemeOf(req);
  if (authority !== undefined) out['x-forwarded-host'] = authority;
  out['x-request-id'] = ctx.id;
  if (markLocalClients && isLoopback(ctx.remoteAddress)) out[LOCAL_CLIENT_FIELD] = '1';
  return out;
}

// ── failures ─────────────────────────────────────────────────────────────────────────────────────

export interface Failures {
  /** No response headers within the limit: 504 naming the controller and the limit. */
  timedOut(ctx: RequestContext, path: string): void;
  /** The connection to a host worker failed (a connect, or before any answer) and the request goes again: logged only. */
  workerFailed(err: NodeJS.ErrnoException, ctx: RequestContext, path: string, pid: number, how: 'unreachable' | 'closed' | 'blocked'): void;
  /** A connect to `upstream` failed and the request goes to another one: logged only. */
  connectFailed(err: NodeJS.ErrnoException, ctx: RequestContext, path: string, upstream: UpstreamState): void;
  /** The request could not be forwarded or the host ended it without headers: 503 or 500. */
  failed(err: NodeJS.ErrnoException, ctx: RequestContext, path: string, upstream: UpstreamState): void;
  /**
   * The host's answer head, read for its signals (common/protocol.ts): its stderr lines go to error.log.
   * Unless it is to be relayed, the engine drops its body and answers with `failed` (ended without
   * headers, as if the connection had closed) or `hostRefused`.
   */
  hostSignals(statusCode: number, headers: Headers, ctx: RequestContext): HostAnswer;
  /**
   * The host said the application ended without headers (common/protocol.ts): Apache's 500 page and
   * `End of script output before headers`, after its stderr lines (hostSignals); no socket failed.
   */
  endedWithoutHeaders(ctx: RequestContext, path: string): void;
  /**
   * The host's answer ended with trailers: its stderr there (a controller that failed mid-answer) goes to
   * error.log and the client's answer, incomplete, is cut. True when it was.
   */
  trailers(trailers: Headers, ctx: RequestContext, path: string): boolean;
  /** Every host worker was busy and its listen queue full: Apache's 503 page and mod_fcgid's line. */
  poolFull(ctx: RequestContext, path: string): void;
  /** A controller threw (its fatal error already relayed by hostSignals): Apache's 500 page. */
  controllerFailed(ctx: RequestContext): void;
  /**
   * The host answered an error itself, not a controller: Apache's page for its status, P6, with the host's
   * Retry-After (a body the host had no room for); a body still arriving is not read on: the connection closes.
   */
  hostRefused(status: number, ctx: RequestContext, path: string, headers: Headers): void;
  /** The body passed LimitRequestBody while it streamed: 413, and the connection closed. */
  tooLarge(ctx: RequestContext, received: number): void;
  /**
   * The host sent bytes past the end of an answer (one that ended whole): its connection is closed, not reused,
   * so they never reach another request.
   */
  pastEnd(ctx: RequestContext, path: string, upstream: UpstreamState): void;
  /** The host's answer broke off after its headers: the client can only be cut; logged once. */
  cutShort(err: NodeJS.ErrnoException, ctx: RequestContext, path: string, upstream: UpstreamState): void;
}

export function failures({ upstreamTimeoutMs, limitRequestBody }: ForwarderOptions): Failures {
  watchOpenFilesLimit();
  const logConnectFailure = (err: NodeJS.ErrnoException, ctx: RequestContext, path: string, upstream: UpstreamState) =>
    ctx.log('proxy', 'error', `attempt to connect to upstream ${upstream.name} failed for ${path}`, `(${err.code})${err.message}`);
  /** The host's stderr lines, as mod_fcgid relays a PHP process's (P5); returns how many. */
  const relayStderr = (fields: Headers, ctx: RequestContext): number => {
    const lines = decodeStderr(fields[HOST_STDERR_FIELD]);
    for (const line of lines) ctx.log('fcgid', 'warn', `${HOST_STDERR_PREFIX}${line}`);
    return lines.length;
  };
  /** Apache's line for a script that gave no header (util_script.c, so `core`): P1. */
  const endOfScriptOutput = (ctx: RequestContext, path: string) => ctx.log('core', 'error', `${END_OF_SCRIPT_OUTPUT}${path}`);
  return {
    timedOut(ctx, path) {
      const seconds = upstreamTimeoutMs / 1000;
      ctx.log(
        'proxy',
        'error',
        `Timeout waiting for output from controller ${controllerOf(path)} (${path}): no response headers within ${seconds} s (max_execution_time ${seconds} s)`,
        '(ETIMEDOUT)The timeout specified has expired',
      );
      ctx.sendErrorPage(504);
    },
    hostSignals(statusCode, headers, ctx) {
      relayStderr(headers, ctx);
      return hostAnswerOf(statusCode, headers);
    },
    endedWithoutHeaders(ctx, path) {
      if (responseGone(ctx.res)) return;
      endOfScriptOutput(ctx, path);
      ctx.sendErrorPage(500);
    },
    trailers(trailers, ctx, path) {
      if (relayStderr(trailers, ctx) === 0) return false;
      ctx.cut = true;
      ctx.log(
        'proxy',
        'error',
        `the answer to ${path} was cut after ${ctx.streamedBytes} bytes of its body: the controller failed while sending it`,
      );
      cutAfterWritten(ctx);
      return true;
    },
    poolFull(ctx, path) {
      ctx.log('fcgid', 'warn', `mod_fcgid: can't apply process slot for ${path}`);
      ctx.sendErrorPage(503);
    },
    controllerFailed(ctx) {
      // The fatal error's line went to error.log with the host's stderr (hostSignals).
      ctx.sendErrorPage(500);
    },
    hostRefused(status, ctx, path, headers) {
      ctx.log('proxy', 'error', `host answered ${status} without a controller for ${path}`);
      if (!ctx.req.complete) ctx.res.shouldKeepAlive = false;
      const retryAfter = headers['retry-after'];
      ctx.sendErrorPage(status, typeof retryAfter === 'string' ? { 'Retry-After': retryAfter } : {});
    },
    tooLarge(ctx, received) {
      ctx.log('http', 'info', `AH01591: Read content length of ${received} is larger than the configured limit of ${limitRequestBody}`);
      const { req, res } = ctx;
      // The rest of the body is not read: without keep-alive, Node closes the connection after the page
      // (or now, if the host's answer already went).
      if (res.writableEnded) return void req.socket?.destroy();
      res.shouldKeepAlive = false;
      ctx.sendErrorPage(413);
    },
    connectFailed: logConnectFailure,
    workerFailed(err, ctx, path, pid, how) {
      const what = { unreachable: 'could not be reached', closed: 'closed the connection before answering', blocked: 'is blocked' }[how];
      ctx.log('proxy', 'warn', `host worker ${pid} ${what} for ${path}; sent again`, `(${err.code ?? 'ECONNRESET'})${err.message}`);
    },
    failed(err, ctx, path, upstream) {
      const { res } = ctx;
      if (responseGone(res)) return; // nobody left to answer (the server logged why, if the request broke off)
      if (res.headersSent) return this.cutShort(err, ctx, path, upstream);
      // res.socket may be null here: Node gives a queued pipelined response no socket until the one before
      // it ends. The page is still written then: Node holds it until its turn.
      if (isConnectError(err)) {
        logConnectFailure(err, ctx, path, upstream);
        return ctx.sendErrorPage(503);
      }
      if (isOutOfDescriptors(err)) {
        ctx.log('proxy', 'error', outOfDescriptorsLine(err, upstream.name, path), errnoText(err));
        return ctx.sendErrorPage(503);
      }
      // The host's connection failed before a response header (a worker killed mid-request): the socket's
      // error as mod_fcgid reports a failed read, then what Apache says of the script (docs/logs.md, "Log lines", P7 and P1).
      if (err.code !== undefined && err.code in errno) {
        ctx.log('fcgid', 'warn', 'mod_fcgid: error reading data from FastCGI server', errnoText(err));
      } else {
        ctx.log('proxy', 'error', `could not forward the request to upstream ${upstream.name}`, `(${err.code ?? 'EPROTO'})${err.message}`);
      }
      endOfScriptOutput(ctx, path);
      ctx.sendErrorPage(500);
    },
    pastEnd(ctx, path, upstream) {
      ctx.log('proxy', 'error', `upstream ${upstream.name} sent bytes past the end of its answer to ${path}: its connection is closed`);
    },
    cutShort(err, ctx, path, upstream) {
      if (ctx.res.destroyed) return;
      ctx.log(
        'proxy',
        'error',
        `error reading response from upstream ${upstream.name} for ${path}: the answer broke off after its headers`,
        `(${err.code ?? 'ECONNRESET'})${err.message}`,
      );
      ctx.res.destroy();
    },
  };
}
