// The application server: fastify with one route, /External/*, dispatched to the controller registry.
// A controller that cannot be loaded ends the request without a single header byte, as the observed
// PHP process did; the proxy turns that into Apache's 500 (DESIGN.md §3).
import { randomUUID } from 'node:crypto';
import fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { ControllerContext } from '../common/controller.ts';
import { ControllerLoadError, ControllerMissingError } from './errors.ts';
import type { HostLog } from './hostLog.ts';
import { parsePhpQuery } from './query.ts';
import type { ControllerRegistry } from './registry.ts';
import { sendResult } from './respond.ts';
import { routeController } from './route.ts';

/** An id the proxy sent, when it looks like one; anything else is replaced. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function createHostApp(registry: ControllerRegistry, log: HostLog): FastifyInstance {
  const app = fastify({
    logger: false,
    // Longer than the proxy agent keeps an idle socket, so the host never closes a socket the proxy is
    // about to reuse (that would look like a dropped request).
    keepAliveTimeout: 75_000,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    routerOptions: { maxParamLength: 2048 },
  });

  /** Ends the request with no response at all: the connection closes before any header. */
  function endWithoutHeaders(request: FastifyRequest, reply: FastifyReply): void {
    reply.hijack();
    request.raw.socket.destroy();
  }

  app.all('/External/*', async function handleController(request, reply) {
    // The proxy closes its upstream request when its client leaves; that close reaches here. Listen
    // before the first await, so a close during the controller's load is not missed.
    const aborter = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) aborter.abort(new Error('client closed the request'));
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

    let controller;
    try {
      controller = await registry.resolve(route.name);
    } catch (err) {
      if (err instanceof ControllerMissingError || err instanceof ControllerLoadError) log.error(`${err.message} ${where}`, request.id);
      else log.error(`Failed opening controller script for ${route.name}: ${(err as Error).stack ?? String(err)} ${where}`, request.id);
      return endWithoutHeaders(request, reply);
    }

    const { query, warnings } = parsePhpQuery(route.rawQuery);
    for (const warning of warnings) log.warn(`${warning} ${where}`, request.id);
    const context: ControllerContext = {
      query,
      rawQuery: route.rawQuery,
      method: request.method,
      path: route.path,
      headers: request.headers,
      requestId: request.id,
      signal: aborter.signal,
    };
    let result: unknown;
    try {
      result = await controller.handler(context);
    } catch (err) {
      // The client gets a bare 500, as PHP sends after an uncaught exception; the stack stays here.
      const detail = err instanceof Error ? controller.mapStack(err.stack ?? err.message) : String(err);
      log.error(`Uncaught exception in controller ${controller.file} (version ${controller.version}) ${where}: ${detail}`, request.id);
      return reply.code(500).type('text/html; charset=UTF-8').send('');
    }
    return sendResult(reply, result);
  });

  return app;
}
