// The application server: fastify with one route, /External/*, dispatched to the controller registry,
// plus php-fpm's /status and /ping, which exist only here: the proxy forwards /External/ alone.
// A controller that cannot be loaded ends the request "without headers", as the observed PHP process did:
// an empty 500 marked so, with the message as the process's stderr, on a connection the proxy keeps; the
// proxy turns that into Apache's 500 page and error.log's lines (docs/design.md §5).
import { METHODS } from 'node:http';
import fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { CONTROLLER_ANSWER_FIELD, CONTROLLER_PREFIX, HOST_MAX_HEADER_SIZE, NOT_STARTED_FIELD } from '../../common/protocol.ts';
import { requestIdOrNew } from '../../common/requestId.ts';
import { continueCall, runControllerCall } from '../controller/controllerCall.ts';
import { routeController } from '../controller/controllerRoute.ts';
import { takeProxyFields } from '../controller/proxyFields.ts';
import { parsePhpCookies, parsePhpQuery } from '../controller/query.ts';
import { readRequestInput, type InputLimits } from '../controller/requestInput.ts';
import type { ControllerRegistry, LoadedController } from '../controller/registry.ts';
import { sendResult } from '../controller/respond.ts';
import { refuseUnreadable } from '../controller/unreadableRequest.ts';
import type { HostLog } from '../wire/hostLog.ts';
import { MISSING_CONTROLLERS, type PoolStatus, type WorkerStats } from '../wire/stats.ts';
import {
  answerCallFailure,
  answerLoadFailure,
  callOf,
  contextOf,
  ControllerExchange,
  countLoadFailure,
  endWithoutHeaders,
  failedWhileSending,
  startupWarnings,
  trackCall,
  watchRequestEnd,
} from './controllerRequest.ts';
import type { ExecutionLimit, Tracked } from './executionLimit.ts';
import type { RunningCalls } from './runningCalls.ts';

export interface HostAppOptions {
  registry: ControllerRegistry;
  log: HostLog;
  stats: WorkerStats;
  /** max_execution_time; absent when unlimited. */
  limit: ExecutionLimit | undefined;
  /** post_max_size, upload_max_filesize, max_file_uploads. */
  inputLimits: InputLimits;
  poolStatus: (full: boolean) => Promise<PoolStatus>;
  /** Called after each controller request ends (the worker counts them for --max-requests). */
  onRequestEnd: () => void;
  /** Controller requests running, until their handler ends (the pool's dispatcher waits on it). */
  running: RunningCalls;
  /** PHP's output_buffering: bytes of a streamed answer held before its status goes out. */
  outputBuffering: number;
  /** The seconds a controller is still held by the pool's quarantine (host/pool/quarantine.ts), or undefined when it runs. */
  quarantined?: (name: string) => number | undefined;
  /** Why this worker starts no new request (an uncaught exception left it unsafe), or undefined while it does. */
  startsNothing?: () => string | undefined;
}

export function createHostApp({
  registry,
  log,
  stats,
  limit,
  inputLimits,
  poolStatus,
  onRequestEnd,
  running,
  outputBuffering,
  quarantined = () => undefined,
  startsNothing,
}: HostAppOptions): FastifyInstance {
  const app = fastify({
    logger: false,
    // Longer than the proxy keeps an idle socket (IDLE_UPSTREAM_SOCKET_MS, proxy/forward/forwarding.ts), so the host never
    // closes a socket the proxy is about to reuse (that would look like a dropped request).
    keepAliveTimeout: 75_000,
    // A retiring worker finishes what it has and lets the proxy close idle sockets (see worker.ts):
    // no 503s and no closing under the proxy's feet.
    forceCloseConnections: false,
    return503OnClosing: false,
    requestIdHeader: false,
    genReqId: (req) => requestIdOrNew(req.headers),
    routerOptions: { maxParamLength: 2048 },
    // Above anything a proxy lets through, forwarding fields included: a head the proxy accepted is never 431 here.
    http: { maxHeaderSize: HOST_MAX_HEADER_SIZE },
    // fastify's own refusals answer JSON, which must never reach a client: a URL it cannot decode, a
    // parameter past its length. Under /External/ that is a name that does not decode, answered as the
    // handler answers one (H2, ended without headers); anything else is refused with a bare 400.
    frameworkErrors(err, request, reply) {
      const route = routeController(request.url);
      if (route.kind === 'invalid' && request.url.startsWith(CONTROLLER_PREFIX)) void refuseInvalidName(request, reply, route.name);
      else void refuse(request, reply, 400, `${err.code} ${err.message}`);
    },
    clientErrorHandler: refuseUnreadable(log),
  });
  // Node keeps the first 2,000 fields and drops the rest without a word; the proxy bounds them
  // (--max-header-fields, up to 10,000), so every field it forwards reaches the controller.
  app.server.maxHeadersCount = 0;
  // A controller answers whatever method the proxy forwards, as a CGI script does (fastify knows eight).
  for (const method of METHODS) {
    if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true });
  }

  /** A name that is not an identifier (H2): ended without headers, as a script that could not be opened. */
  function refuseInvalidName(request: FastifyRequest, reply: FastifyReply, name: string): FastifyReply {
    const message = `Failed opening controller script ${registry.dir}/${JSON.stringify(name)}: Invalid controller name (allowed: ^[A-Za-z_][A-Za-z0-9_]*$) in ${request.method} ${request.url}`;
    log.error(message, request.id);
    countLoadFailure(stats, MISSING_CONTROLLERS);
    return endWithoutHeaders(reply, message);
  }

  /** The host's own refusal: a bare status and a host.log line; the proxy answers Apache's page for it (P6). */
  function refuse(request: FastifyRequest, reply: FastifyReply, status: number, why: string): FastifyReply {
    log.warn(`Refused ${request.method} ${request.url}: ${why}`, request.id);
    return reply.code(status).type('text/html; charset=UTF-8').send('');
  }

  /** Ends the request with no response at all: the connection closes (a controller that overran its limit). */
  function cutConnection(request: FastifyRequest, reply: FastifyReply): void {
    if (!reply.sent) reply.hijack();
    request.raw.socket.destroy();
  }

  // Anything that escapes a handler (a fastify error): a bare 500 and a host.log line, never fastify's
  // JSON error to the client.
  app.setErrorHandler((err: Error, request, reply) => {
    log.error(`Error answering ${request.method} ${request.url}: ${err.stack ?? err.message}`, request.id);
    if (reply.sent) request.raw.socket.destroy();
    // Not a controller's answer, whatever it had set: the proxy answers its 500 page (P6).
    else reply.removeHeader(CONTROLLER_ANSWER_FIELD).code(500).type('text/html; charset=UTF-8').send('');
  });

  // Bodies are the controller's, read as PHP reads them (requestInput.ts), never refused by type here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  // Only what the proxy never forwards (it sends /External/ alone): fastify's JSON 404 goes to nobody.
  app.setNotFoundHandler((request, reply) => refuse(request, reply, 404, 'no such route'));

  app.get('/ping', async (_request, reply) => reply.type('text/plain').send('pong'));
  app.get('/status', async (request) => poolStatus(Object.hasOwn(request.query as object, 'full')));

  app.all('/External/*', handleController);

  /**
   * A request past its start-by time (START_BY_FIELD: this worker was blocked meanwhile) is not started: the proxy
   * has sent it elsewhere, or will. Checked with no await between it and the controller's call, which from then on
   * shows among the calls the worker runs (what the proxy reads when it is blocked).
   */
  function pastStartBy(request: FastifyRequest, reply: FastifyReply, startBy: number | undefined): boolean {
    const unsafe = startsNothing?.();
    if (unsafe === undefined && (startBy === undefined || !(Date.now() > startBy))) return false;
    const why = unsafe ?? 'it was read after its start-by time';
    log.info(`Did not start ${request.method} ${request.url}: ${why}, and goes to another worker`, request.id);
    void reply.code(503).header(NOT_STARTED_FIELD, '1').send('');
    return true;
  }

  /**
   * One controller request, counted as running until its handler ends. It awaits only what is pending: a loaded
   * controller, the input of a request without a body and a result that is not a Response are used at once.
   */
  async function handleController(request: FastifyRequest, reply: FastifyReply) {
    const { startBy } = takeProxyFields(request.raw);
    if (pastStartBy(request, reply, startBy)) return reply;
    running.begin(request, reply);
    try {
      const startedAt = stats.begin();
      const exchange = new ControllerExchange(request, reply);
      watchRequestEnd(exchange, startedAt, { stats, log, onRequestEnd });
      const route = routeController(request.url);
      if (route.kind === 'invalid') return refuseInvalidName(request, reply, route.name);
      // Held for killing workers: not run, not loaded; the proxy answers its 503 page with this Retry-After.
      const retryAfter = quarantined(route.name);
      if (retryAfter !== undefined)
        return reply.code(503).header('retry-after', String(retryAfter)).type('text/html; charset=UTF-8').send('');

      let controller: LoadedController;
      try {
        const acquired = registry.acquire(route.name);
        controller = acquired instanceof Promise ? await acquired : acquired;
        // Its load awaited: the worker may have been blocked since the first check.
        if (acquired instanceof Promise && pastStartBy(request, reply, startBy)) {
          registry.release(controller);
          return reply;
        }
      } catch (err) {
        return answerLoadFailure(err, exchange, route, { stats, log });
      }
      const counters = stats.controller(route.name);
      counters.requests += 1;
      // Everything after acquire() is inside the try, so the version is always released.
      let overran = false;
      let tracked: Tracked | undefined;
      /** PHP's start-up warnings for the request's input, with where they happened: stderr before the script runs. */
      let warnings: string[] = [];
      try {
        const { query, warnings: queryWarnings } = parsePhpQuery(route.rawQuery);
        const cookies = parsePhpCookies(request.headers.cookie);
        // As PHP, the body is read before the script runs and its time is not max_execution_time's.
        const read = readRequestInput(request.raw, inputLimits);
        const input = read instanceof Promise ? await read : read;
        // A body-less request has nothing to delete, and its end makes no promise for it.
        if (exchange.ended) await input.discard?.();
        else exchange.discardUploads = input.discard;
        warnings = startupWarnings(exchange, [...queryWarnings, ...cookies.warnings, ...input.warnings], log);
        const context = contextOf(exchange, route, { query, cookies: cookies.query, input });
        if (limit)
          tracked = trackCall(limit, exchange, controller, () => {
            overran = true;
            exchange.abort(new Error('max_execution_time exceeded'));
            cutConnection(request, reply);
          });
        const call = callOf(exchange, controller);
        const ran = runControllerCall(call, request.raw, () => controller.handler(context));
        const result = ran instanceof Promise ? await ran : ran;
        if (overran) return;
        const failed = failedWhileSending(exchange, controller, counters, log);
        const sent =
          result instanceof Response
            ? continueCall(call, () => sendResult(reply, result, failed, outputBuffering))
            : sendResult(reply, result, failed, outputBuffering);
        return sent instanceof Promise ? await sent : sent;
      } catch (err) {
        if (overran) return;
        return answerCallFailure(err, exchange, controller, counters, warnings, log);
      } finally {
        if (tracked) limit?.release(tracked);
        registry.release(controller);
      }
    } finally {
      running.end(request);
    }
  }

  return app;
}
