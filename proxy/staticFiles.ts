// Everything that is not forwarded is a file under www/public, served by `send` (the library Express
// uses: conditional GET, Range, ETag, index.html, and its path checks: decode → NUL → `..` → dotfiles).
// Failures get Apache's page and an error.log line; a missing file is logged as Windows Apache did.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import send from 'send';
import { sendErrorPage } from './errorPages.ts';
import { clientOf, type ErrorLog } from './errorLog.ts';

/** The OS status the observed Windows deployment logged for a missing file (Apache's %E). */
export const FILE_NOT_FOUND_STATUS = '(OS 2)The system cannot find the file specified.  ';

const ALLOWED_METHODS = 'GET, HEAD';

interface SendError extends Error {
  status?: number;
  code?: string;
  path?: string;
  headers?: Record<string, string>;
}

export function staticFiles(root: string, errorLog: ErrorLog) {
  /** Where a URL path points under the root, for the log line only (send does the real resolution). */
  function fileFor(urlPath: string): string {
    try {
      return join(root, decodeURIComponent(urlPath));
    } catch {
      return join(root, urlPath);
    }
  }

  function fail(req: IncomingMessage, res: ServerResponse, urlPath: string, requestId: string, err: SendError): void {
    // A read error after the headers went out: the response can only be cut (STYLE habit 5).
    if (res.headersSent) {
      errorLog.write({ module: 'core', level: 'error', status: `(${err.code ?? 'EIO'})${err.message}`, client: clientOf(req.socket), message: `Cut short while sending ${urlPath}`, requestId });
      res.destroy();
      return;
    }
    const status = err.status ?? 500;
    const client = clientOf(req.socket);
    if (status === 404) {
      errorLog.write({
        module: 'core',
        level: 'info',
        status: FILE_NOT_FOUND_STATUS,
        client,
        message: `AH00128: File does not exist: ${err.path ?? fileFor(urlPath)}`,
        requestId,
      });
    } else if (status >= 500) {
      errorLog.write({ module: 'core', level: 'error', status: `(${err.code ?? 'EIO'})${err.message}`, client, message: `Cannot serve ${urlPath}`, requestId });
    } else {
      errorLog.write({ module: 'core', level: 'info', client, message: `Refused static request ${urlPath}: ${status} ${err.message}`, requestId });
    }
    // send may have set ETag, Content-Range and the like for the file it meant to send.
    for (const name of res.getHeaderNames()) if (name !== 'x-request-id') res.removeHeader(name);
    sendErrorPage(res, status, err.headers);
  }

  return function serveStatic(req: IncomingMessage, res: ServerResponse, urlPath: string, requestId: string): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      errorLog.write({ module: 'core', level: 'info', client: clientOf(req.socket), message: `Method ${req.method} not allowed for ${urlPath}`, requestId });
      sendErrorPage(res, 405, { Allow: ALLOWED_METHODS });
      return;
    }
    send(req, urlPath, { root, dotfiles: 'ignore', index: ['index.html'] })
      .on('error', (err: SendError) => fail(req, res, urlPath, requestId, err))
      .pipe(res);
  };
}
