// The application server: fastify with one route, /External/*, dispatched to the controller registry,
// plus php-fpm's /status and /ping, which exist only here: the proxy forwards /External/ alone.
// A controller that cannot be loaded ends the request "without headers", as the observed PHP process did:
// an empty 500 marked so, with the message as the process's stderr, on a connection the proxy keeps; the
// proxy turns that into Apache's 500 page and error.log's lines (docs/design.md §5).
import { METHODS } from 'node:http';
import fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import {
  CONTROLLER_ANSWER_FIELD,
  CONTROLLER_FAILED_FIELD,
  CONTROLLER_PREFIX,
  encodeStderr,
  ENDED_WITHOUT_HEADERS_FIELD,
  HOST_MAX_HEADER_SIZE,
  HOST_STDERR_FIELD,
  NOT_STARTED_FIELD,
  START_BY_FIELD,
} from '../common/protocol.ts';
import { continueCall, keepLoadFailure, runControllerCall } from './controllerCall.ts';
import { controllerContext } from './controllerContext.ts';
import {
  ClientClosedRequest,
  ControllerHeadTooLargeError,
  ControllerLinkRefusedError,
  ControllerExit,
  ControllerFault,
  ControllerLoadError,
  ControllerMissingError,
} from './errors.ts';
import type { ExecutionLimit, Tracked } from './executionLimit.ts';
import type { HostLog } from './hostLog.ts';
import { parsePhpCookies, parsePhpQuery } from './query.ts';
import { readRequestInput, type InputLimits } from './requestInput.ts';
import type { ControllerRegistry, LoadedController } from './registry.ts';
import { sendResult } from './respond.ts';
import { AnswerLengthError } from './answerFraming.ts';
import { routeController } from './route.ts';
import { requestIdOrNew } from '../common/requestId.ts';
import { refuseUnreadable } from './unreadableRequest.ts';
import type { RunningCalls } from './runningCalls.ts';
import { MISSING_CONTROLLERS, type PoolStatus, type WorkerStats } from './stats.ts';

/** Stack lines relayed to error.log with a failure mid-answer; the whole stack stays in host.log. */
const STDERR_STACK_LINES = 3;

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
  /** The seconds a controller is still held by the pool's quarantine (host/quarantine.ts), or undefined when it runs. */
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
    // Longer than the proxy keeps an idle socket (IDLE_UPSTREAM_SOCKET_MS, proxy/forwarding.ts), so the host never
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

  function countLoadFailure(row: string): void {
    const counters = stats.controller(row);
    counters.requests += 1;
    counters.loadFailures += 1;
  }

  /** Ends the request as an application that wrote `fatal` to stderr and no header. */
  function endWithoutHeaders(reply: FastifyReply, fatal: string): FastifyReply {
    // The pool's primary writes the same bytes for a controller with no file (missingController.ts).
    return reply
      .code(500)
      .header(ENDED_WITHOUT_HEADERS_FIELD, '1')
      .header(HOST_STDERR_FIELD, encodeStderr(`PHP Fatal error:  ${fatal}`))
      .send('');
  }

  /** A name that is not an identifier (H2): ended without headers, as a script that could not be opened. */
  function refuseInvalidName(request: FastifyRequest, reply: FastifyReply, name: string): FastifyReply {
    const message = `Failed opening controller script ${registry.dir}/${JSON.stringify(name)}: Invalid controller name (allowed: ^[A-Za-z_][A-Za-z0-9_]*$) in ${request.method} ${request.url}`;
    log.error(message, request.id);
    countLoadFailure(MISSING_CONTROLLERS);
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
   * One controller request, counted as running until its handler ends. It awaits only what is pending: a loaded
   * controller, the input of a request without a body and a result that is not a Response are used at once.
   */
  /**
   * A request past its start-by time (START_BY_FIELD: this worker was blocked meanwhile) is not started: the proxy
   * has sent it elsewhere, or will. Checked with no await between it and the controller's call, which from then on
   * shows among the calls the worker runs (what the proxy reads when it is blocked).
   */
  function pastStartBy(request: FastifyRequest, reply: FastifyReply): boolean {
    const startBy = request.headers[START_BY_FIELD];
    const unsafe = startsNothing?.();
    if (unsafe === undefined && (startBy === undefined || !(Date.now() > Number(startBy)))) return false;
    const why = unsafe ?? 'it was read after its start-by time';
    log.info(`Did not start ${request.method} ${request.url}: ${why}, and goes to another worker`, request.id);
    void reply.code(503).header(NOT_STARTED_FIELD, '1').send('');
    return true;
  }

  async function handleController(request: FastifyRequest, reply: FastifyReply) {
    if (pastStartBy(request, reply)) return reply;
    running.begin();
    try {
      const startedAt = stats.begin();
      // One close listener: the request's end for the counters, and, if no answer went out, the client
      // left (the proxy closes its upstream request then), so the controller's signal fires. It is in
      // place before the first await, so a close during the controller's load is not missed.
      // The controller's signal is made when first read: an AbortController (an EventTarget) cost a small call more
      // than its parsing and routing together, and most controllers never read it.
      let aborter: AbortController | undefined;
      let abortedFor: Error | undefined;
      const abort = (reason: Error) => {
        abortedFor ??= reason;
        aborter?.abort(reason);
      };
      const signal = () => {
        if (aborter) return aborter.signal;
        aborter = new AbortController();
        if (abortedFor) aborter.abort(abortedFor);
        return aborter.signal;
      };
      const startedMs = Date.now();
      let ended = false;
      let discardUploads: (() => Promise<void>) | undefined;
      reply.raw.once('close', () => {
        ended = true;
        stats.end(startedAt, request.method, request.url);
        if (!reply.raw.writableFinished) abort(new ClientClosedRequest());
        discardUploads?.().catch((err: Error) => log.error(`Could not delete the uploads of ${request.url}: ${err.message}`, request.id));
        onRequestEnd();
      });
      if (request.raw.socket.destroyed) abort(new ClientClosedRequest());

      const route = routeController(request.url);
      const what = `${request.method} ${request.url}`;
      const where = `in ${what}`;
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
        if (acquired instanceof Promise && pastStartBy(request, reply)) {
          registry.release(controller);
          return reply;
        }
      } catch (err) {
        // A name with no file is the client's word, not a controller: one row counts them all.
        countLoadFailure(err instanceof ControllerMissingError ? MISSING_CONTROLLERS : route.name);
        const message =
          err instanceof ControllerMissingError || err instanceof ControllerLoadError || err instanceof ControllerLinkRefusedError
            ? `${err.message} ${where}`
            : `Failed opening controller script for ${route.name}: ${(err as Error).stack ?? String(err)} ${where}`;
        log.error(message, request.id);
        // A missing file is no controller's failure; anything else is shown on `extqs dev`'s page (devErrorPage.ts).
        if (!(err instanceof ControllerMissingError)) {
          const file = err instanceof ControllerLoadError || err instanceof ControllerLinkRefusedError ? err.file : undefined;
          keepLoadFailure(
            request.raw,
            {
              requestId: request.id,
              controller: route.name,
              mapStack: (stack) => stack,
              file: file ?? route.name,
              files: file ? [file] : [],
              what,
            },
            err,
          );
        }
        return endWithoutHeaders(reply, message);
      }

      const counters = stats.controller(route.name);
      counters.requests += 1;
      // Everything after acquire() is inside the try, so the version is always released.
      let overran = false;
      let tracked: Tracked | undefined;
      /** PHP's start-up warnings for the request's input, with where they happened: stderr before the script runs. */
      let startupWarnings: string[] = [];
      try {
        const { query, warnings } = parsePhpQuery(route.rawQuery);
        const cookies = parsePhpCookies(request.headers.cookie);
        // As PHP, the body is read before the script runs and its time is not max_execution_time's.
        const read = readRequestInput(request.raw, inputLimits);
        const input = read instanceof Promise ? await read : read;
        // A body-less request has nothing to delete, and its end makes no promise for it.
        if (ended) await input.discard?.();
        else discardUploads = input.discard;
        if (warnings.length + cookies.warnings.length + input.warnings.length > 0)
          startupWarnings = [...warnings, ...cookies.warnings, ...input.warnings].map((warning) => `${warning} ${where}`);
        for (const warning of startupWarnings) log.warn(warning, request.id);
        // PHP writes them to stderr, which mod_fcgid relays to error.log: the proxy does, whatever the answer.
        if (startupWarnings.length > 0) reply.header(HOST_STDERR_FIELD, encodeStderr(startupWarnings.join('\n')));
        const context = controllerContext(
          {
            query,
            post: input.post,
            files: input.files,
            cookies: cookies.query,
            body: input.body,
            rawQuery: route.rawQuery,
            method: request.method,
            path: route.path,
            pathInfo: route.pathInfo,
            headers: request.headers,
            requestId: request.id,
          },
          signal,
        );
        if (limit) {
          tracked = {
            name: controller.name,
            file: controller.file,
            requestId: request.id,
            version: controller.version,
            sourceMap: controller.sourceMap,
            what,
            startedAt: Date.now(),
            // Read by the controller (php://input) while it still arrives: a listener takes its data.
            receiving: () => !request.raw.complete && request.raw.listenerCount('data') > 0,
            onOverrun: () => {
              overran = true;
              abort(new Error('max_execution_time exceeded'));
              cutConnection(request, reply);
            },
          };
          limit.track(tracked);
          const timed = tracked;
          if (!request.raw.complete) request.raw.once('end', () => limit.restart(timed));
        }
        // As this call: its console lines carry the request id and the controller's name (consoleCapture.ts).
        const call = {
          requestId: request.id,
          controller: controller.name,
          mapStack: controller.mapStack,
          file: controller.file,
          files: controller.files,
          what,
        };
        const ran = runControllerCall(call, request.raw, () => controller.handler(context));
        const result = ran instanceof Promise ? await ran : ran;
        if (overran) return;
        const failedWhileSending = (err: unknown) => {
          counters.errors += 1;
          const detail = err instanceof Error ? controller.mapStack(err.stack ?? err.message) : String(err);
          const message =
            err instanceof AnswerLengthError
              ? `Controller ${controller.name} (${controller.file}) answered ${where}, but ${err.message}: the answer is cut and its connection closed`
              : `Uncaught exception in controller ${controller.file} (version ${controller.version}) while sending its answer ${where}: ${detail}`;
          log.error(message, request.id);
          // As PHP's fatal error reaches stderr: the message and the first lines of its stack.
          return `PHP Fatal error:  ${message.split('\n', 1 + STDERR_STACK_LINES).join('\n')}`;
        };
        const sent =
          result instanceof Response
            ? continueCall(call, () => sendResult(reply, result, failedWhileSending, outputBuffering))
            : sendResult(reply, result, failedWhileSending, outputBuffering);
        return sent instanceof Promise ? await sent : sent;
      } catch (err) {
        if (overran) return;
        // The client left and the controller's await was aborted with it: the client's doing, not a failure.
        if (abortedFor instanceof ClientClosedRequest) {
          counters.aborts = (counters.aborts ?? 0) + 1;
          log.info(`Client closed the request to controller ${controller.name} ${where} after ${Date.now() - startedMs} ms`, request.id);
          return;
        }
        // PHP's exit: the script ends there, and what it wrote so far (nothing, before it returned) is its answer.
        if (err instanceof ControllerExit) {
          log.info(
            `Controller ${controller.name} (${controller.file}) ${err.message} ${where}: its request ends there, answered 200`,
            request.id,
          );
          return reply.sent ? reply : reply.type('text/html; charset=UTF-8').send('');
        }
        counters.errors += 1;
        // The client gets Apache's 500 page, as for a controller that cannot load; the stack stays here.
        const failure = err instanceof ControllerFault ? err.cause : err;
        const detail = failure instanceof Error ? controller.mapStack(failure.stack ?? failure.message) : String(failure);
        const message =
          err instanceof ControllerHeadTooLargeError
            ? `Controller ${controller.name} (${controller.file}) answered ${where}, but ${err.message}: answered 500`
            : `${err instanceof ControllerFault ? err.kind : 'Uncaught exception'} in controller ${controller.file} (version ${controller.version}) ${where}: ${detail}`;
        log.error(message, request.id);
        // PHP's fatal error line reaches error.log through the proxy; the stack stays in host.log.
        return reply
          .code(500)
          .type('text/html; charset=UTF-8')
          .header(CONTROLLER_FAILED_FIELD, '1')
          .header(HOST_STDERR_FIELD, encodeStderr([...startupWarnings, `PHP Fatal error:  ${message.split('\n', 1)[0]}`].join('\n')))
          .send('');
      } finally {
        if (tracked) limit?.release(tracked);
        registry.release(controller);
      }
    } finally {
      running.end();
    }
  }

  return app;
}
