// Everything that is not forwarded is a file under www/public, served by `send` (the library Express
// uses: conditional GET, Range, ETag, index.html, and its path checks: decode → NUL → `..` → dotfiles).
// What send found (a small file with its headers, or a missing path) is remembered in the StaticCache
// and answered from memory next time. Failures get Apache's page and an error.log line; a missing file
// is logged as Windows Apache did. A text file goes compressed to a client that accepts it: a precompressed
// sibling (file.br, file.gz) when there is one, else encoded on its way out (compression.ts); the cache
// holds small files' encoded forms.
import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import fresh from 'fresh';
import { contentType } from 'mime-types';
import { extname, join } from 'node:path';
import send from 'send';
import type { ContentCoding } from '../common/settings.ts';
import { encodeResponse, isCompressible, SUFFIX, type Negotiated } from './compression.ts';
import { sendErrorPage } from './errorPages.ts';
import { clientOf, type ErrorLog } from './errorLog.ts';
import { statEtag, type CacheEntry, type StaticCache } from './staticCache.ts';

/** The OS status the observed Windows deployment logged for a missing file (Apache's %E). */
const FILE_NOT_FOUND_STATUS = '(OS 2)The system cannot find the file specified.  ';

const ALLOWED_METHODS = 'GET, HEAD';

/**
 * RFC 8615's `/.well-known/` is the one dot-directory served (certbot's HTTP-01 challenges, security.txt):
 * nothing below it may start with a dot either.
 */
const WELL_KNOWN = /^\/\.well-known\/(?:[^./][^/]*\/?)*$/;

const dotfilesOf = (urlPath: string) => (WELL_KNOWN.test(urlPath) ? 'allow' : 'ignore');

interface SendError extends Error {
  status?: number;
  code?: string;
  path?: string;
  headers?: Record<string, string>;
}

/** Outside the URL-safe set, or `\`, which WHATWG URL parsers read as `/` (so `/\host` would be `//host`). */
const LOCATION_UNSAFE = /[^\x21\x23-\x3B\x3D\x3F-\x5B\x5D-\x5F\x61-\x7A\x7C\x7E]/g;

/**
 * Where `/dir` redirects: `/dir/`, with one leading slash and `\` escaped, so no browser can read it as a
 * protocol-relative `//evil.example/` (send's own Location leaves `\` as is: CVE-2015-1164's cousin).
 */
export function directoryLocation(urlPath: string): string {
  const escaped = urlPath.replace(LOCATION_UNSAFE, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
  return `/${escaped.replace(/^\/+/, '')}/`;
}

/** Preconditions (RFC 9110 §13.1.1, §13.1.4) and Range: answered by send from the file, never from memory. */
const SEND_ONLY_HEADERS = ['range', 'if-match', 'if-unmodified-since'] as const;

/** What a 304 repeats of the 200 (RFC 9110 §15.4.5). */
const NOT_MODIFIED_HEADERS = ['etag', 'last-modified', 'cache-control', 'vary'] as const;

/** The file a URL path names, with index.html for a directory, as send serves it: the name its type comes from. */
function servedName(urlPath: string): string {
  return urlPath.endsWith('/') ? `${urlPath}index.html` : urlPath;
}

/** The type send gives a file, found before send looks (mime-types, as send uses it). */
function typeOf(urlPath: string): string | false {
  return contentType(extname(servedName(urlPath)));
}

/** A file's head as send gives it, from the head of its precompressed sibling that send served instead. */
function identityHeaders(siblingHeaders: OutgoingHttpHeaders, original: Stats): OutgoingHttpHeaders {
  const headers = { ...siblingHeaders };
  delete headers['x-request-id'];
  delete headers['content-encoding'];
  delete headers.vary;
  headers['content-length'] = String(original.size);
  headers.etag = statEtag(original);
  headers['last-modified'] = original.mtime.toUTCString();
  headers['accept-ranges'] = 'bytes';
  return headers;
}

export function staticFiles(root: string, errorLog: ErrorLog, cache: StaticCache) {
  /** Where a URL path points under the root, for the log line only (send does the real resolution). */
  function fileFor(urlPath: string): string {
    try {
      return join(root, decodeURIComponent(urlPath));
    } catch {
      return join(root, urlPath);
    }
  }

  function fail(req: IncomingMessage, res: ServerResponse, urlPath: string, requestId: string, err: SendError, version: number): void {
    // A read error after the headers went out: the response can only be cut (STYLE habit 5).
    if (res.headersSent) {
      errorLog.write({
        module: 'core',
        level: 'error',
        status: `(${err.code ?? 'EIO'})${err.message}`,
        client: clientOf(req.socket),
        message: `Cut short while sending ${urlPath}`,
        requestId,
      });
      res.destroy();
      return;
    }
    const status = err.status ?? 500;
    const client = clientOf(req.socket);
    if (status === 404) {
      const file = err.path ?? fileFor(urlPath);
      if (err.code === 'ENOENT' && err.path) cache.rememberMissing(urlPath, file, version);
      return notFound(req, res, file, requestId, err.headers);
    } else if (status >= 500) {
      errorLog.write({
        module: 'core',
        level: 'error',
        status: `(${err.code ?? 'EIO'})${err.message}`,
        client,
        message: `Cannot serve ${urlPath}`,
        requestId,
      });
    } else {
      errorLog.write({
        module: 'core',
        level: 'info',
        client,
        message: `Refused static request ${urlPath}: ${status} ${err.message}`,
        requestId,
      });
    }
    // send may have set ETag, Content-Range and the like for the file it meant to send.
    for (const name of res.getHeaderNames()) if (name !== 'x-request-id') res.removeHeader(name);
    sendErrorPage(res, status, err.headers);
  }

  function notFound(req: IncomingMessage, res: ServerResponse, file: string, requestId: string, headers?: Record<string, string>): void {
    errorLog.write({
      module: 'core',
      level: 'info',
      status: FILE_NOT_FOUND_STATUS,
      client: clientOf(req.socket),
      message: `AH00128: File does not exist: ${file}`,
      requestId,
    });
    for (const name of res.getHeaderNames()) if (name !== 'x-request-id') res.removeHeader(name);
    sendErrorPage(res, 404, headers);
  }

  /** Where a URL path points, only for a plain path (no NUL, no segment starting with a dot: send refuses those itself). */
  function plainFileFor(urlPath: string): string | undefined {
    let decoded: string;
    try {
      decoded = decodeURIComponent(servedName(urlPath));
    } catch {
      return undefined;
    }
    if (decoded.includes('\0') || decoded.split('/').some((segment) => segment.startsWith('.'))) return undefined;
    return join(root, decoded);
  }

  /** The first coding, in the client's order, with a precompressed sibling beside an existing file. */
  async function precompressed(urlPath: string, codings: readonly ContentCoding[]) {
    const file = plainFileFor(urlPath);
    if (file === undefined) return undefined;
    const original = await stat(file).catch(() => undefined);
    if (!original?.isFile()) return undefined;
    for (const coding of codings) {
      const sibling = await stat(`${file}${SUFFIX[coding]}`).catch(() => undefined);
      if (sibling?.isFile()) return { coding, file, original };
    }
    return undefined;
  }

  function serveCached(
    req: IncomingMessage,
    res: ServerResponse,
    entry: Extract<CacheEntry, { kind: 'file' }>,
    negotiated?: Negotiated,
  ): void {
    const compressible = negotiated !== undefined && isCompressible(entry.headers['content-type']);
    const coding = compressible ? negotiated.codings.find((c) => entry.encoded?.[c]) : undefined;
    const form = coding && entry.encoded?.[coding];
    const headers = form ? form.headers : compressible ? (entry.varying ??= { ...entry.headers, vary: 'Accept-Encoding' }) : entry.headers;
    // An encoded form is compared with the client's tags as sent: its own ETag, or a variant's.
    const conditions = form ? { ...req.headers, 'if-none-match': negotiated?.ifNoneMatch } : req.headers;
    if (fresh(conditions, { etag: headers.etag, 'last-modified': headers['last-modified'] })) {
      const notModified: OutgoingHttpHeaders = {};
      for (const name of NOT_MODIFIED_HEADERS) if (headers[name] !== undefined) notModified[name] = headers[name];
      res.writeHead(304, notModified);
      res.end();
      return;
    }
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : (form || entry).body);
  }

  function redirectToDirectory(res: ServerResponse, urlPath: string): void {
    const location = directoryLocation(urlPath);
    const page = Buffer.from(
      `<!DOCTYPE html>\n<html><head><title>Redirecting</title></head><body><p>Redirecting to <a href="${location.replace(/&/g, '&amp;')}">here</a>.</p></body></html>\n`,
    );
    res.writeHead(301, {
      Location: location,
      'Content-Type': 'text/html; charset=UTF-8',
      'Content-Length': String(page.length),
      'Content-Security-Policy': "default-src 'none'",
      'X-Content-Type-Options': 'nosniff',
    });
    res.end(res.req.method === 'HEAD' ? undefined : page);
  }

  return function serveStatic(
    req: IncomingMessage,
    res: ServerResponse,
    urlPath: string,
    requestId: string,
    negotiated?: Negotiated,
  ): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      errorLog.write({
        module: 'core',
        level: 'info',
        client: clientOf(req.socket),
        message: `Method ${req.method} not allowed for ${urlPath}`,
        requestId,
      });
      sendErrorPage(res, 405, { Allow: ALLOWED_METHODS });
      return;
    }
    const cached = cache.get(urlPath);
    if (cached?.kind === 'missing') return notFound(req, res, cached.file, requestId);
    // Ranges and preconditions are rare: send answers them from the file.
    const sendOnly = SEND_ONLY_HEADERS.some((name) => req.headers[name] !== undefined);
    if (cached?.kind === 'file' && !sendOnly) return serveCached(req, res, cached, negotiated);

    const version = cache.version;
    const type = negotiated && typeOf(urlPath);
    if (!negotiated || !isCompressible(type)) return fromDisk(req, res, urlPath, requestId, version);
    // Set before send looks, so its 304, its 206 and the uncoded answer carry it too.
    res.setHeader('Vary', 'Accept-Encoding');
    if (negotiated.codings.length === 0) return fromDisk(req, res, urlPath, requestId, version, negotiated);
    precompressed(urlPath, negotiated.codings).then(
      (found) => {
        if (!found) return fromDisk(req, res, urlPath, requestId, version, negotiated);
        res.setHeader('Content-Type', type as string);
        res.setHeader('Content-Encoding', found.coding);
        send(req, `${servedName(urlPath)}${SUFFIX[found.coding]}`, {
          root,
          dotfiles: dotfilesOf(urlPath),
          index: false,
          acceptRanges: false,
        })
          .on('error', (err: SendError) => fail(req, res, urlPath, requestId, err, version))
          .on('stream', () => {
            if (res.statusCode !== 200) return;
            void cache.rememberFile(urlPath, found.file, identityHeaders(res.getHeaders(), found.original), version);
          })
          .pipe(res);
      },
      (err: SendError) => fail(req, res, urlPath, requestId, err, version),
    );
  };

  /** send reads the file; a compressible one is encoded on its way out when `negotiated` allows it. */
  function fromDisk(
    req: IncomingMessage,
    res: ServerResponse,
    urlPath: string,
    requestId: string,
    version: number,
    negotiated?: Negotiated,
  ) {
    const sendOnly = SEND_ONLY_HEADERS.some((name) => req.headers[name] !== undefined);
    if (negotiated) encodeResponse(req, res, negotiated, { flushEachTurn: false });
    let file: string | undefined;
    send(req, urlPath, { root, dotfiles: dotfilesOf(urlPath), index: ['index.html'] })
      .on('error', (err: SendError) => fail(req, res, urlPath, requestId, err, version))
      .on('file', (path: string) => (file = path))
      .on('directory', () => redirectToDirectory(res, urlPath))
      .on('stream', () => {
        if (file && res.statusCode === 200 && !sendOnly) {
          // The head before any encoding: that is written with the first bytes, after this.
          const headers = res.getHeaders();
          delete headers['x-request-id'];
          delete headers.vary;
          void cache.rememberFile(urlPath, file, headers, version);
        }
      })
      .pipe(res);
  }
}
