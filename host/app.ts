// The application server: fastify with one route, /External/*, dispatched to the controller registry,
// plus php-fpm's /status and /ping, which exist only here: the proxy forwards /External/ alone.
// A controller that cannot be loaded ends the request without a single header byte, as the observed
// PHP process did; the proxy turns that into Apache's 500 (docs/design.md §3).
import { randomUUID } from 'node:crypto';
import fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { ControllerContext } from '../common/controller.ts';
import { WELL_FORMED_REQUEST_ID } from '../common/protocol.ts';
import { ControllerLoadError, ControllerMissingError } from './errors.ts';
import type { ExecutionLimit, Tracked } from './executionLimit.ts';
import type { HostLog } from './hostLog.ts';
import { parsePhpQuery } from './query.ts';
import type { ControllerRegistry, LoadedController } from './registry.ts';
import { sendResult } from './respond.ts';
import { routeController } from './route.ts';
import type { PoolStatus, WorkerStats } from './stats.ts';

export interface HostAppOptions {
  registry: ControllerRegistry;
  log: HostLog;
  stats: WorkerStats;
  /** max_execution_time; absent when unlimited. */
  limit: ExecutionLimit | undefined;
  poolStatus: (full: boolean) => Promise<PoolStatus>;
  /** Called after each controller request ends (the worker counts them for --max-requests). */
  onRequestEnd: () => void;
}

export function createHostApp({ registry, log, stats, limit, poolStatus, onRequestEnd }: HostAppOptions): FastifyInstance {
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
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && WELL_FORMED_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    routerOptions: { maxParamLength: 2048 },
  });

  /** Ends the request with no response at all: the connection closes before any header. */
  function endWithoutHeaders(request: FastifyRequest, reply: FastifyReply): void {
    if (!reply.sent) reply.hijack();
    request.raw.socket.destroy();
  }

  // Anything that escapes a handler (a result JSON cannot serialise, a fastify error): a bare 500 and a
  // host.log line, never fastify's JSON error to the client.
  app.setErrorHandler((err: Error, request, reply) => {
    log.error(`Error answering ${request.method} ${request.url}: ${err.stack ?? err.message}`, request.id);
    if (reply.sent) request.raw.socket.destroy();
    else reply.code(500).type('text/html; charset=UTF-8').send('');
  });

  app.get('/ping', async (_request, reply) => reply.type('text/plain').send('pong'));
  app.get('/status', async (request) => poolStatus(Object.hasOwn(request.query as object, 'full')));

  app.all('/External/*', async function handleController(request, reply) {
    const startedAt = stats.begin();
    // One close listener: the request's end for the counters, and, if no answer went out, the client
    // left (the proxy closes its upstream request then), so the controller's signal fires. It is in
    // place before the first await, so a close during the controller's load is not missed.
    const aborter = new AbortController();
    reply.raw.once('close', () => {
      stats.end(startedAt, request.method, request.url);
      if (!reply.raw.writableFinished) aborter.abort(new Error('client closed the request'));
      onRequestEnd();
    });
    if (request.raw.socket.destroyed) aborter.abort(new Error('client closed the request'));

    const route = routeController(request.url);
    const where = `in ${request.method} ${request.url}`;
    if (route.kind === 'invalid') {
      log.error(
        `Failed opening controller script ${registry.dir}/${JSON.stringify(route.name)}: Invalid controller name (allowed: ^[A-Za-z_][A-Za-z0-9_]*$) ${where}`,
        request.id,
      );
      return endWithoutHeaders(request, reply);
    }

    const counters = stats.controller(route.name);
    counters.requests += 1;
    let controller: LoadedController;
    try {
      controller = await registry.acquire(route.name);
    } catch (err) {
      counters.loadFailures += 1;
      if (err instanceof ControllerMissingError || err instanceof ControllerLoadError) log.error(`${err.message} ${where}`, request.id);
      else log.error(`Failed opening controller script for ${route.name}: ${(err as Error).stack ?? String(err)} ${where}`, request.id);
      return endWithoutHeaders(request, reply);
    }

    // Everything after acquire() is inside the try, so the version is always released.
    let overran = false;
    let tracked: Tracked | undefined;
    try {
      const { query, warnings } = parsePhpQuery(route.rawQuery);
      for (const warning of warnings) log.warn(`${warning} ${where}`, request.id);
      const context: ControllerContext = {
        query,
        rawQuery: route.rawQuery,
        method: request.method,
        path: route.path,
        pathInfo: route.pathInfo,
        headers: request.headers,
        requestId: request.id,
        signal: aborter.signal,
      };
      if (limit) {
        tracked = {
          name: controller.name,
          file: controller.file,
          requestId: request.id,
          what: `${request.method} ${request.url}`,
          startedAt: Date.now(),
          onOverrun: () => {
            overran = true;
            aborter.abort(new Error('max_execution_time exceeded'));
            endWithoutHeaders(request, reply);
          },
        };
        limit.track(tracked);
      }
      const result = await controller.handler(context);
      if (overran) return;
      return sendResult(reply, result);
    } catch (err) {
      if (overran) return;
      counters.errors += 1;
      // The client gets a bare 500, as PHP sends after an uncaught exception; the stack stays here.
      const detail = err instanceof Error ? controller.mapStack(err.stack ?? err.message) : String(err);
      log.error(`Uncaught exception in controller ${controller.file} (version ${controller.version}) ${where}: ${detail}`, request.id);
      return reply.code(500).type('text/html; charset=UTF-8').send('');
    } finally {
      if (tracked) limit?.release(tracked);
      registry.release(controller);
    }
  });

  return app;
}
