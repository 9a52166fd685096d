// The pool's public server: the host's socket (0600) or port, with admission of its clients; /status, /ping,
// /ready and the worker table answered here, every other request dispatched to a worker.
import { chmod, rm } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HOST_MAX_HEADER_SIZE, WORKERS_PATH } from '../../common/protocol.ts';
import { formatUpstream } from '../../common/settingParsers.ts';
import type { HostConfig } from '../../common/settings.ts';
import { refuseUnreadable } from '../controller/unreadableRequest.ts';
import { admittingServer, type Admission } from './admission.ts';
import { canTakeRequest } from './pmPolicy.ts';
import { available, type PoolState } from './poolState.ts';
import { poolStatus } from './poolStatus.ts';

/** Longer than the proxy keeps an idle socket (proxy/forward/forwarding.ts), as the workers' own servers did. */
const KEEP_ALIVE_MS = 75_000;

/** The server, not yet listening. */
export function poolServer(pool: PoolState, admission: Admission): Server {
  const { log } = pool;
  // Node's defaults otherwise, as fastify's server had them, but no 400 for a request without Host (HTTP/1.0).
  const server = admittingServer(
    admission,
    { maxHeaderSize: HOST_MAX_HEADER_SIZE, requestTimeout: 0, keepAliveTimeout: KEEP_ALIVE_MS, requireHostHeader: false },
    (req, res) => answerPoolRequest(pool, req, res),
    (message) => log.error(message),
  );
  // Node keeps the first 2,000 fields and drops the rest without a word; the proxy bounds them
  // (--max-header-fields, up to 10,000), so every field it forwards reaches the controller.
  server.maxHeadersCount = 0;
  server.on('clientError', refuseUnreadable(log));
  return server;
}

/** /status, /ping and /ready are the pool's own (php-fpm's master answers the first two), and /workers; the rest goes to a worker. */
function answerPoolRequest(pool: PoolState, req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '';
  const path = url.split('?', 1)[0];
  if (req.method === 'GET' && path === WORKERS_PATH) return pool.feed.follow(res);
  if ((req.method === 'GET' || req.method === 'HEAD') && (path === '/status' || path === '/ping' || path === '/ready')) {
    if (path === '/ping') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('pong');
    // The proxy's readiness probe asks this narrow question: a worker listens that can take a request now.
    if (path === '/ready')
      return void (canTakeRequest(pool.settings.current.pm, available(pool))
        ? res.writeHead(200).end('ready')
        : res.writeHead(503).end('no worker listens'));
    const full = new URLSearchParams(url.slice(path.length + 1)).has('full');
    poolStatus(pool, full).then(
      (status) => res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(status)),
      (err: Error) => {
        pool.log.error(`Could not gather /status: ${err.message}`);
        res.writeHead(500).end();
      },
    );
    return;
  }
  pool.dispatcher.handle(req, res);
}

/** Listens on the host's socket or port; the address the ready line and host.log give. */
export async function listen(server: Server, config: HostConfig, tls: boolean): Promise<string> {
  // A socket file left by a host that was killed would make listen() fail with EADDRINUSE.
  if (config.socket) await rm(config.socket, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const backlog = Math.max(config.listenBacklog, 511);
    if (config.socket) server.listen({ path: config.socket, backlog }, resolve);
    else server.listen({ host: config.hostListen, port: config.hostPort, backlog }, resolve);
  });
  if (config.socket) await chmod(config.socket, 0o600);
  const port = (server.address() as AddressInfo).port;
  return config.socket
    ? `unix:${config.socket}`
    : formatUpstream({ kind: 'tcp', host: config.hostListen, port, ...(tls && { tls: true }) });
}
