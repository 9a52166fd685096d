// The least a Node.js front can do on the bench's paths, as a yardstick for extqs in the same run:
// node:http and an undici Pool forwarding /External/ to the host, www/public's files from memory, a
// bare 404 otherwise; no logs, no request ids, no limits. `nodeFloor.ts <host socket> <public dir>`
// prints a ready line like extqs's.
//
// With a logs directory as a third argument it is the logging floor: the same, plus what the legacy
// deployment's answers and lines require of any front, done as plainly as Node allows: the client's fields
// and address to the host (PHP's $_SERVER) with a request id, and the id back; Apache's pages for a missing
// file and for a script that ended without headers; a file's validators (ETag, Last-Modified: a 304 to a
// client that has it); the access line of every answered request and error.log's lines (the host's stderr,
// `End of script output before headers`, AH00128), formatted by extqs's own functions and written once a
// FLUSH_WINDOW, as extqs writes them. From the floor to it is the seed's behaviour; from it to extqs, extqs's structure.
//
// It runs through tsx, which names every function it makes as an object's property or a variable
// (esbuild's keepNames: a defineProperty call each): the handlers are classes, so a request makes none.
import { openSync, readdirSync, readFileSync, statSync, writeSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Pool, type Dispatcher } from 'undici';
import { FLUSH_WINDOW } from '../common/lineLog.ts';
import { combinedLine, errorLine, nowMicros, type ErrorEntry } from '../common/logFormat.ts';
import { CONTROLLER_ANSWER_FIELD, decodeStderr, ENDED_WITHOUT_HEADERS_FIELD, HOST_STDERR_FIELD } from '../common/protocol.ts';
import { readyLine } from '../common/ready.ts';
import { errorPage } from '../proxy/core/errorPages.ts';
import { serverBanner } from '../proxy/server/serverBanner.ts';
import { statEtag } from '../proxy/static/staticCache.ts';
import { FILE_NOT_FOUND_STATUS } from '../proxy/static/staticFiles.ts';

const [socketPath, publicDir, logsDir] = process.argv.slice(2);
const files = new Map(readdirSync(publicDir).map((name) => [`/${name}`, readFileSync(join(publicDir, name))]));
/** The host's fields no client sees: the signals to the front, and its own Server. */
const HOST_ONLY = new Set([HOST_STDERR_FIELD, ENDED_WITHOUT_HEADERS_FIELD, CONTROLLER_ANSWER_FIELD, 'server']);
const notFound = Buffer.from(
  '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head><title>404 Not Found</title></head></html>\n',
);
// Up to a connection per client connection of the stack bench's 100 (bench/stack.ts); undici opens them only as needed.
const pool = new Pool('http://localhost', { socketPath, connections: 128 });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

/** The host's answer, relayed as it comes. */
class Relay implements Dispatcher.DispatchHandler {
  constructor(protected readonly res: ServerResponse) {}

  onConnect(): void {}

  onError(err: Error): void {
    process.stderr.write(`${err.message}\n`);
    if (!this.res.headersSent) this.res.statusCode = 502;
    this.res.end();
  }

  onHeaders(status: number, rawHeaders: Buffer[]): boolean {
    this.res.statusCode = status;
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = rawHeaders[i].toString('latin1');
      if (!HOP_BY_HOP.has(name.toLowerCase())) this.res.setHeader(name, rawHeaders[i + 1].toString('latin1'));
    }
    return true;
  }

  // The bench's bodies are small: never pausing the upstream keeps this handler minimal.
  onData(chunk: Buffer): boolean {
    this.res.write(chunk);
    return true;
  }

  onComplete(): void {
    this.res.end();
  }
}

function bare(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
  if (url.startsWith('/External/')) {
    pool.dispatch({ path: url, method: 'GET', headers: { host: 'localhost' } }, new Relay(res));
    return;
  }
  const file = files.get(url);
  res.writeHead(file ? 200 : 404, { 'Content-Type': 'text/html', 'Content-Length': (file ?? notFound).length });
  res.end(file ?? notFound);
}

const SERVER = serverBanner('full')!;

/** An answer the front makes itself: Apache's page for its status. */
interface Page {
  status: number;
  body: Buffer;
}

/** access.log and error.log as the legacy wrote them, written once a FLUSH_WINDOW (its line bound never comes into play here). */
class LegacyLogs {
  private readonly accessFd: number;
  private readonly errorFd: number;
  private accessLines: string[] = [];
  private errorLines: string[] = [];
  private flushing: NodeJS.Timeout | undefined;

  constructor(dir: string) {
    this.accessFd = openSync(join(dir, 'access.log'), 'a');
    this.errorFd = openSync(join(dir, 'error.log'), 'a');
  }

  error(req: IncomingMessage, requestId: string, entry: Pick<ErrorEntry, 'module' | 'level' | 'message' | 'status'>): void {
    const client = `${req.socket.remoteAddress}:${req.socket.remotePort}`;
    // The referer as the proxy and Apache append it, so the floor writes the proxy's lines.
    this.errorLines.push(errorLine({ ...entry, client, referer: req.headers.referer, requestId }, nowMicros(), process.pid));
    this.flushLater();
  }

  access(req: IncomingMessage, time: Date, status: number, bytes: number): void {
    const { remoteAddress = '-' } = req.socket;
    const { method = 'GET', url = '/', httpVersion, headers } = req;
    const { referer, 'user-agent': userAgent } = headers;
    this.accessLines.push(combinedLine({ remoteAddress, time, method, url, httpVersion, status, bytes, referer, userAgent }));
    this.flushLater();
  }

  private flushLater(): void {
    this.flushing ??= setTimeout(flushLogs, FLUSH_WINDOW.ms, this);
  }

  /** Answers with `page` and logs it. */
  answer(req: IncomingMessage, res: ServerResponse, requestId: string, time: Date, page: Page): void {
    res.writeHead(page.status, {
      'X-Request-Id': requestId,
      Server: SERVER,
      'Content-Type': 'text/html; charset=iso-8859-1',
      'Content-Length': page.body.length,
    });
    res.end(page.body);
    this.access(req, time, page.status, page.body.length);
  }

  flush(): void {
    this.flushing = undefined;
    if (this.accessLines.length > 0) writeSync(this.accessFd, `${this.accessLines.join('\n')}\n`);
    if (this.errorLines.length > 0) writeSync(this.errorFd, `${this.errorLines.join('\n')}\n`);
    this.accessLines = [];
    this.errorLines = [];
  }
}

function flushLogs(logs: LegacyLogs): void {
  logs.flush();
}

const MISSING_FILE: Page = { status: 404, body: errorPage(404) };
const ENDED_WITHOUT_HEADERS: Page = { status: 500, body: errorPage(500) };

/** The host's answer relayed with the legacy's lines: its stderr to error.log, and Apache's 500 for a script that ended without headers. */
class LoggedRelay extends Relay {
  private bytes = 0;
  private replaced = false;

  constructor(
    private readonly req: IncomingMessage,
    res: ServerResponse,
    private readonly logs: LegacyLogs,
    private readonly requestId: string,
    private readonly time: Date,
  ) {
    super(res);
  }

  onHeaders(status: number, rawHeaders: Buffer[]): boolean {
    const { req, res, logs, requestId } = this;
    let stderr: string | undefined;
    let endedWithoutHeaders = false;
    const relayed: number[] = [];
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = rawHeaders[i].toString('latin1').toLowerCase();
      if (name === HOST_STDERR_FIELD) stderr = rawHeaders[i + 1].toString('latin1');
      else if (name === ENDED_WITHOUT_HEADERS_FIELD) endedWithoutHeaders = true;
      else if (!HOP_BY_HOP.has(name) && !HOST_ONLY.has(name)) relayed.push(i);
    }
    for (const line of decodeStderr(stderr))
      logs.error(req, requestId, { module: 'fcgid', level: 'warn', message: `mod_fcgid: stderr: ${line}` });
    if (endedWithoutHeaders) {
      this.replaced = true;
      const path = (req.url ?? '/').split('?', 1)[0];
      logs.error(req, requestId, { module: 'core', level: 'error', message: `End of script output before headers: ${path}` });
      logs.answer(req, res, requestId, this.time, ENDED_WITHOUT_HEADERS);
      return true;
    }
    res.statusCode = status;
    res.setHeader('X-Request-Id', requestId);
    res.setHeader('Server', SERVER);
    for (const i of relayed) res.setHeader(rawHeaders[i].toString('latin1'), rawHeaders[i + 1].toString('latin1'));
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.replaced) return true;
    this.bytes += chunk.length;
    return super.onData(chunk);
  }

  onComplete(): void {
    if (this.replaced) return;
    super.onComplete();
    this.logs.access(this.req, this.time, this.res.statusCode, this.bytes);
  }
}

/** The client's fields as they go to the host, with who the client is and the request's id. */
function forwardedFields(req: IncomingMessage, requestId: string): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = {};
  for (const name in req.headers) {
    const value = req.headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name) && !name.startsWith('x-forwarded-')) fields[name] = value;
  }
  fields['x-forwarded-for'] = req.socket.remoteAddress ?? '';
  fields['x-forwarded-proto'] = 'http';
  if (req.headers.host !== undefined) fields['x-forwarded-host'] = req.headers.host;
  fields['x-request-id'] = requestId;
  return fields;
}

/** The logging floor's request handler: the bare one's work, with the legacy's answers and lines. */
function logging(dir: string): (req: IncomingMessage, res: ServerResponse) => void {
  const logs = new LegacyLogs(dir);
  // A file's head, made once: what send gives it (validators, ranges, caching), and its ETag for a 304.
  const fileHeads = new Map(
    [...files].map(([path, body]) => {
      const stats = statSync(join(publicDir, path));
      const etag = statEtag(stats);
      const notModified = { Server: SERVER, 'Cache-Control': 'public, max-age=0', 'Last-Modified': stats.mtime.toUTCString(), ETag: etag };
      const head = { ...notModified, 'Accept-Ranges': 'bytes', 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': body.length };
      return [path, { etag, notModified, head }];
    }),
  );
  return (req, res) => {
    const time = new Date();
    const requestId = randomUUID();
    const url = req.url ?? '/';
    if (url.startsWith('/External/')) {
      const headers = forwardedFields(req, requestId);
      pool.dispatch({ path: url, method: 'GET', headers }, new LoggedRelay(req, res, logs, requestId, time));
      return;
    }
    const path = url.split('?', 1)[0];
    const file = files.get(path);
    if (!file) {
      const message = `AH00128: File does not exist: ${join(publicDir, path)}`;
      logs.error(req, requestId, { module: 'core', level: 'info', status: FILE_NOT_FOUND_STATUS, message });
      return logs.answer(req, res, requestId, time, MISSING_FILE);
    }
    const { etag, notModified, head } = fileHeads.get(path)!;
    res.setHeader('X-Request-Id', requestId);
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, notModified).end();
      return logs.access(req, time, 304, 0);
    }
    res.writeHead(200, head);
    res.end(file);
    logs.access(req, time, 200, file.length);
  };
}

const server = createServer(logsDir === undefined ? bare : logging(logsDir));
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${readyLine(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
