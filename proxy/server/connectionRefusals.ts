// What never becomes a request of the passes: bytes Node's parser refused, and CONNECT. Each is answered
// with Apache's page written straight to the socket, then the connection closes, with an error.log line
// and an access.log line (the request line as it came) as Apache writes them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { statusOfParserError } from '../../common/protocol.ts';
import type { AccessLog } from '../observe/accessLog.ts';
import { errorPage, reasonOf } from '../core/errorPages.ts';
import { clientOf } from '../core/clientAddress.ts';
import type { ErrorLog } from '../observe/errorLog.ts';
import { isLingering } from './lingeringClose.ts';
import type { RequestMetrics } from '../observe/requestMetrics.ts';
import { KIND } from '../core/routeDecision.ts';
import { answeringOn, isHttp2 } from '../core/protocols.ts';
import { bodyBeingRead, bodyRefusedOn, refuseBody } from './requestBodies.ts';

/** Node's parser error: the bytes it had of the request it refused. */
type ParserError = NodeJS.ErrnoException & { rawPacket?: Buffer };

/** Apache's %r for a refused request: its first line as it came, at most LimitRequestLine (8190) bytes. */
function requestLineOf(rawPacket: Buffer | undefined): string {
  if (!rawPacket) return '';
  const head = rawPacket.subarray(0, 8190).toString('latin1');
  return head.split(/\r?\n/, 1)[0];
}

export interface RefusalOptions {
  errorLog: ErrorLog;
  accessLog: AccessLog;
  requestMetrics: RequestMetrics;
  /** The Server field (--server-tokens) as it is now (a SIGHUP may change it); undefined sends none. */
  serverBanner: () => string | undefined;
  /** HTTP/2's CONNECT (RFC 9113 §8.5) comes with a response for a socket: it is answered as any request. */
  answerHttp2Connect: (req: IncomingMessage, res: ServerResponse) => void;
}

export function connectionRefusals({ errorLog, accessLog, requestMetrics, serverBanner, answerHttp2Connect }: RefusalOptions) {
  const serverField = () => {
    const banner = serverBanner();
    return banner === undefined ? '' : `Server: ${banner}\r\n`;
  };

  /**
   * Writes Apache's page for `status` straight to a socket Node's server no longer answers on, then closes
   * it; returns the page's length (the access log's %b).
   */
  function answerAndClose(socket: Socket, status: number, extraHeaders = ''): number {
    const page = errorPage(status);
    const head =
      `HTTP/1.1 ${status} ${reasonOf(status)}\r\n${serverField()}${extraHeaders}` +
      `Content-Type: text/html; charset=iso-8859-1\r\nContent-Length: ${page.length}\r\nConnection: close\r\n\r\n`;
    socket.end(Buffer.concat([Buffer.from(head, 'latin1'), page]));
    return page.length;
  }

  /** The listeners' 'clientError': answer 400 (or 408, 431) as Apache does, and log it. */
  function refuseUnparsed(err: NodeJS.ErrnoException, socket: Socket): void {
    // node:http2 passes TLS handshake failures on as client errors (a scanner, an old client): Apache logs
    // them at info (mod_ssl AH02008), and there is no HTTP to answer with.
    if (err.code?.startsWith('ERR_SSL_') || err.code?.startsWith('ERR_TLS_')) {
      errorLog.write({ module: 'ssl', level: 'info', client: clientOf(socket), message: `SSL handshake failed: ${err.message.trim()}` });
      socket.destroy();
      return;
    }
    if (bodyRefusedOn(socket)) return; // its request's failure is logged and answered already
    // A body being dropped after its answer, past --request-timeout or malformed: the lingering ends.
    if (isLingering(socket)) return void socket.destroy();
    const reading = bodyBeingRead(socket);
    if (reading) {
      // The client closed its side mid-body: it left, the body is not malformed. Cut as a client that left:
      // the request's close logs F5 (noteBrokenBody), and the engine's abort ends the host's body early.
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
   * The listeners' 'connect': Node would drop the connection without a word; answered 405 as Apache without
   * mod_proxy_connect does, and logged.
   */
  function refuseTunnel(req: IncomingMessage, socket: Socket): void {
    if (isHttp2(req)) return answerHttp2Connect(req, socket as unknown as ServerResponse);
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

  return { refuseUnparsed, refuseTunnel };
}
