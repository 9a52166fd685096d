// The steps of one controller request on a worker (host/worker/app.ts runs them in order): the request's end and
// the controller's abort signal, the answer to a controller that cannot load, the input and its start-up
// warnings, the execution limit, and the answer to a controller that failed.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CONTROLLER_FAILED_FIELD, encodeStderr, ENDED_WITHOUT_HEADERS_FIELD, HOST_STDERR_FIELD } from '../../common/protocol.ts';
import type { ControllerContext } from '../../common/controller.ts';
import { AnswerLengthError } from '../controller/answerFraming.ts';
import { keepLoadFailure, type ControllerCall } from '../controller/controllerCall.ts';
import { controllerContext } from '../controller/controllerContext.ts';
import type { ControllerRoute } from '../controller/controllerRoute.ts';
import {
  ClientClosedRequest,
  ControllerExit,
  ControllerFault,
  ControllerHeadTooLargeError,
  ControllerLinkRefusedError,
  ControllerLoadError,
  ControllerMissingError,
} from '../controller/errors.ts';
import type { RequestInput } from '../controller/requestInput.ts';
import type { LoadedController } from '../controller/registry.ts';
import type { HostLog } from '../wire/hostLog.ts';
import { MISSING_CONTROLLERS, type ControllerCounters, type WorkerStats } from '../wire/stats.ts';
import type { ExecutionLimit, Tracked } from './executionLimit.ts';

/** Stack lines relayed to error.log with a failure mid-answer; the whole stack stays in host.log. */
const STDERR_STACK_LINES = 3;

type Route = Extract<ControllerRoute, { kind: 'controller' }>;

/**
 * One controller request from its start: whether it has ended (its connection closed), why its controller's
 * signal fired, and the uploads to delete once it ends.
 */
export class ControllerExchange {
  /** `GET /External/Latest?x=1`, for the log lines. */
  readonly what: string;
  /** `in GET /External/Latest?x=1` */
  readonly where: string;
  readonly startedMs = Date.now();
  ended = false;
  /** Why the controller's signal fired (or fires once it is read): the client left, or the limit cut it. */
  abortedFor: Error | undefined;
  discardUploads: (() => Promise<void>) | undefined;
  // The controller's signal is made when first read: an AbortController (an EventTarget) cost a small call more
  // than its parsing and routing together, and most controllers never read it.
  private aborter: AbortController | undefined;

  constructor(
    readonly request: FastifyRequest,
    readonly reply: FastifyReply,
  ) {
    this.what = `${request.method} ${request.url}`;
    this.where = `in ${this.what}`;
  }

  abort(reason: Error): void {
    this.abortedFor ??= reason;
    this.aborter?.abort(reason);
  }

  readonly signal = (): AbortSignal => {
    if (this.aborter) return this.aborter.signal;
    this.aborter = new AbortController();
    if (this.abortedFor) this.aborter.abort(this.abortedFor);
    return this.aborter.signal;
  };
}

/**
 * One close listener: the request's end for the counters, and, if no answer went out, the client left (the proxy
 * closes its upstream request then), so the controller's signal fires. Put in place before the first await, so a
 * close during the controller's load is not missed.
 */
export function watchRequestEnd(
  exchange: ControllerExchange,
  startedAt: number,
  { stats, log, onRequestEnd }: { stats: WorkerStats; log: HostLog; onRequestEnd: () => void },
): void {
  const { request, reply } = exchange;
  reply.raw.once('close', () => {
    exchange.ended = true;
    stats.end(startedAt, request.method, request.url);
    if (!reply.raw.writableFinished) exchange.abort(new ClientClosedRequest());
    exchange
      .discardUploads?.()
      .catch((err: Error) => log.error(`Could not delete the uploads of ${request.url}: ${err.message}`, request.id));
    onRequestEnd();
  });
  if (request.raw.socket.destroyed) exchange.abort(new ClientClosedRequest());
}

export function countLoadFailure(stats: WorkerStats, row: string): void {
  const counters = stats.controller(row);
  counters.requests += 1;
  counters.loadFailures += 1;
}

/** Ends the request as an application that wrote `fatal` to stderr and no header. */
export function endWithoutHeaders(reply: FastifyReply, fatal: string): FastifyReply {
  // The pool's primary writes the same bytes for a controller with no file (missingController.ts).
  return reply
    .code(500)
    .header(ENDED_WITHOUT_HEADERS_FIELD, '1')
    .header(HOST_STDERR_FIELD, encodeStderr(`PHP Fatal error:  ${fatal}`))
    .send('');
}

/** A controller that could not be loaded: counted, logged, kept for the dev error page, ended without headers. */
export function answerLoadFailure(
  err: unknown,
  exchange: ControllerExchange,
  route: Route,
  { stats, log }: { stats: WorkerStats; log: HostLog },
): FastifyReply {
  const { request, reply, what, where } = exchange;
  // A name with no file is the client's word, not a controller: one row counts them all.
  countLoadFailure(stats, err instanceof ControllerMissingError ? MISSING_CONTROLLERS : route.name);
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

/**
 * PHP's start-up warnings for the request's input (query, cookies, body), with where they happened: host.log, and
 * stderr before the script runs (mod_fcgid relays it to error.log: the proxy does, whatever the answer).
 */
export function startupWarnings(exchange: ControllerExchange, warnings: string[], log: HostLog): string[] {
  if (warnings.length === 0) return [];
  const { request, reply, where } = exchange;
  const located = warnings.map((warning) => `${warning} ${where}`);
  for (const warning of located) log.warn(warning, request.id);
  reply.header(HOST_STDERR_FIELD, encodeStderr(located.join('\n')));
  return located;
}

/** What the controller is given: its input and the request's parts, and the signal made when first read. */
export function contextOf(
  exchange: ControllerExchange,
  route: Route,
  parsed: { query: ControllerContext['query']; cookies: ControllerContext['cookies']; input: RequestInput },
): ControllerContext {
  const { request } = exchange;
  const { query, cookies, input } = parsed;
  return controllerContext(
    {
      query,
      post: input.post,
      files: input.files,
      cookies,
      body: input.body,
      rawQuery: route.rawQuery,
      method: request.method,
      path: route.path,
      pathInfo: route.pathInfo,
      headers: request.headers,
      requestId: request.id,
    },
    exchange.signal,
  );
}

/** The call under max_execution_time; `overran` aborts it and cuts its connection. Its time starts once its body is in. */
export function trackCall(limit: ExecutionLimit, exchange: ControllerExchange, controller: LoadedController, overran: () => void): Tracked {
  const { request } = exchange;
  const tracked: Tracked = {
    name: controller.name,
    file: controller.file,
    requestId: request.id,
    version: controller.version,
    sourceMap: controller.sourceMap,
    what: exchange.what,
    startedAt: Date.now(),
    // Read by the controller (php://input) while it still arrives: a listener takes its data.
    receiving: () => !request.raw.complete && request.raw.listenerCount('data') > 0,
    onOverrun: overran,
  };
  limit.track(tracked);
  if (!request.raw.complete) request.raw.once('end', () => limit.restart(tracked));
  return tracked;
}

/** As this call: its console lines carry the request id and the controller's name (consoleCapture.ts). */
export function callOf(exchange: ControllerExchange, controller: LoadedController): ControllerCall {
  return {
    requestId: exchange.request.id,
    controller: controller.name,
    mapStack: controller.mapStack,
    file: controller.file,
    files: controller.files,
    what: exchange.what,
  };
}

/** A failure while the answer goes out: counted and logged; returns the stderr line, as PHP's fatal error reaches it. */
export function failedWhileSending(
  exchange: ControllerExchange,
  controller: LoadedController,
  counters: ControllerCounters,
  log: HostLog,
): (err: unknown) => string {
  return (err) => {
    counters.errors += 1;
    const detail = err instanceof Error ? controller.mapStack(err.stack ?? err.message) : String(err);
    const message =
      err instanceof AnswerLengthError
        ? `Controller ${controller.name} (${controller.file}) answered ${exchange.where}, but ${err.message}: the answer is cut and its connection closed`
        : `Uncaught exception in controller ${controller.file} (version ${controller.version}) while sending its answer ${exchange.where}: ${detail}`;
    log.error(message, exchange.request.id);
    // As PHP's fatal error reaches stderr: the message and the first lines of its stack.
    return `PHP Fatal error:  ${message.split('\n', 1 + STDERR_STACK_LINES).join('\n')}`;
  };
}

/**
 * What the controller threw (or its call rejected with): a client that left, PHP's exit, or a failure answered 500
 * with PHP's fatal error line (the stack stays in host.log).
 */
export function answerCallFailure(
  err: unknown,
  exchange: ControllerExchange,
  controller: LoadedController,
  counters: ControllerCounters,
  warnings: string[],
  log: HostLog,
): FastifyReply | undefined {
  const { request, reply, where } = exchange;
  // The client left and the controller's await was aborted with it: the client's doing, not a failure.
  if (exchange.abortedFor instanceof ClientClosedRequest) {
    counters.aborts = (counters.aborts ?? 0) + 1;
    log.info(`Client closed the request to controller ${controller.name} ${where} after ${Date.now() - exchange.startedMs} ms`, request.id);
    return undefined;
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
    .header(HOST_STDERR_FIELD, encodeStderr([...warnings, `PHP Fatal error:  ${message.split('\n', 1)[0]}`].join('\n')))
    .send('');
}
