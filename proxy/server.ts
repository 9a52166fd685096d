// The web-server role: every request gets an id and an access-log line, then is either forwarded to
// the host (/External/…) or answered from www/public.
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import type { Upstream } from '../common/config.ts';
import type { AccessLog } from './accessLog.ts';
import { errorPage, sendErrorPage } from './errorPages.ts';
import { clientOf, type ErrorLog } from './errorLog.ts';
import { createForwarder } from './forward.ts';
import { requestIdOf } from './requestId.ts';
import { routeRequest } from './route.ts';
import { staticFiles } from './staticFiles.ts';

export interface ProxyOptions {
  www: string;
  upstream: Upstream;
  /** 0 = wait for the host's headers as long as it takes. */
  upstreamTimeoutMs: number;
  accessLog: AccessLog;
  errorLog: ErrorLog;
}

export function createProxyServer({ www, upstream, upstreamTimeoutMs, accessLog, errorLog }: ProxyOptions): Server {
  const forward = createForwarder(upstream, errorLog, upstreamTimeoutMs);
  const serveStatic = staticFiles(join(www, 'public'), errorLog);

  const server = createServer(
    {
      // Apache's defaults: KeepAliveTimeout 5 s; the host keeps its sockets longer (see host/app.ts).
      keepAliveTimeout: 5_000,
      headersTimeout: 20_000,
      requestTimeout: 60_000,
    },
    function handleRequest(req: IncomingMessage, res: ServerResponse) {
      accessLog.track(req, res);
      const requestId = requestIdOf(req);
      res.setHeader('X-Request-Id', requestId);
      const route = routeRequest(req.url ?? '');
      switch (route.kind) {
        case 'forward':
          return forward(req, res, route.url, requestId);
        case 'static':
          return serveStatic(req, res, route.path, requestId);
        case 'bad-request':
          errorLog.write({ module: 'core', level: 'info', client: clientOf(req.socket), message: `Invalid request target ${JSON.stringify(req.url)}`, requestId });
          return sendErrorPage(res, 400);
      }
    },
  );

  // A request Node's parser rejects never reaches the handler: answer 400 as Apache does, and log it.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    errorLog.write({ module: 'core', level: 'info', client: clientOf(socket), message: `Bad request: ${err.code ?? ''} ${err.message}` });
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const page = errorPage(status);
    const head =
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      `Content-Type: text/html; charset=iso-8859-1\r\nContent-Length: ${page.length}\r\nConnection: close\r\n\r\n`;
    socket.end(Buffer.concat([Buffer.from(head, 'latin1'), page]));
  });

  return server;
}
