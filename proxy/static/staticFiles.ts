// Everything that is not forwarded is a file under www/public, served by `send` (the library Express
// uses: conditional GET, Range, ETag, index.html, and its path checks: decode → NUL → `..` → dotfiles).
// What send found (a small file with its headers, or a missing path) is remembered in the StaticCache
// and answered from memory next time. Failures get Apache's page and an error.log line; a missing file
// is logged as Windows Apache did. A text file goes compressed to a client that accepts it: a precompressed
// sibling (file.br, file.gz) when there is one, else encoded on its way out (answerSink.ts); the cache
// holds small files' encoded forms. Symbolic links are followed as --follow-symlinks says (common/linkGuard.ts):
// a path is judged before send opens it, and the file send opened is checked to be the one judged; a
// refused link is Apache's 403 with its AH00037 line.
import type { ReadStream, Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import fresh from 'fresh';
import { contentType } from 'mime-types';
import { extname, join } from 'node:path';
import send from 'send';
import { LINK_REFUSED, LinkRefusedError, type LinkVerdict, type Refusal } from '../../common/linkGuard.ts';
import type { ContentCoding } from '../../common/settings.ts';
import { EncodingSink, responseWritingTo } from '../core/answerSink.ts';
import { isCompressible, SUFFIX, type Negotiated } from '../core/compression.ts';
import type { RequestContext } from '../core/requestContext.ts';
import { statEtag, type CacheEntry, type StaticCache } from './staticCache.ts';

/** The OS status the observed Windows deployment logged for a missing file (Apache's %E). */
export const FILE_NOT_FOUND_STATUS = '(OS 2)The system cannot find the file specified.  ';

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

/** Fields the server sets on every answer (server.ts): kept on an error page, never cached with a file's head. */
const SERVER_FIELDS: readonly string[] = ['x-request-id', 'server'];

/** Drops what send set for the file it meant to send, before an error page. */
function clearFileFields(res: ServerResponse): void {
  for (const name of res.getHeaderNames()) if (!SERVER_FIELDS.includes(name)) res.removeHeader(name);
}

/** A file's head without the fields of this one answer, as the cache keeps it. */
function withoutServerFields(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const copy = { ...headers };
  for (const name of SERVER_FIELDS) delete copy[name];
  return copy;
}

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
  const headers = withoutServerFields(siblingHeaders);
  delete headers['content-encoding'];
  delete headers.vary;
  headers['content-length'] = String(original.size);
  headers.etag = statEtag(original);
  headers['last-modified'] = original.mtime.toUTCString();
  headers['accept-ranges'] = 'bytes';
  return headers;
}

/** Answers a request for a path under www/public (the files pass). */
export type ServeStatic = ReturnType<typeof staticFiles>;

export function staticFiles(root: string, cache: StaticCache) {
  /** The root's --follow-symlinks guard: the cache reads through the same one. */
  const links = cache.links;

  /** Where a URL path points under the root, for the log line only (send does the real resolution). */
  function fileFor(urlPath: string): string {
    try {
      return join(root, decodeURIComponent(urlPath));
    } catch {
      return join(root, urlPath);
    }
  }

  function fail(ctx: RequestContext, urlPath: string, err: SendError, version: number): void {
    const { res } = ctx;
    // A read error after the headers went out: the response can only be cut (STYLE habit 5).
    if (res.headersSent) {
      ctx.log('core', 'error', `Cut short while sending ${urlPath}`, `(${err.code ?? 'EIO'})${err.message}`);
      res.destroy();
      return;
    }
    // The file send opened was not the one judged: a link swapped in after the check.
    if (err instanceof LinkRefusedError) return refuseLink(ctx, err);
    const status = err.status ?? 500;
    if (status === 404) {
      const file = err.path ?? fileFor(urlPath);
      if (err.code === 'ENOENT' && err.path) cache.rememberMissing(urlPath, file, version);
      return notFound(ctx, file, err.headers);
    } else if (status >= 500) {
      ctx.log('core', 'error', `Cannot serve ${urlPath}`, `(${err.code ?? 'EIO'})${err.message}`);
    } else {
      ctx.log('core', 'info', `Refused static request ${urlPath}: ${status} ${err.message}`);
    }
    // send may have set ETag, Content-Range and the like for the file it meant to send.
    clearFileFields(res);
    ctx.sendErrorPage(status, err.headers);
  }

  function notFound(ctx: RequestContext, file: string, headers?: Record<string, string>): void {
    const { res } = ctx;
    ctx.log('core', 'info', `AH00128: File does not exist: ${file}`, FILE_NOT_FOUND_STATUS);
    clearFileFields(res);
    ctx.sendErrorPage(404, headers);
  }

  /** Apache's answer to a link it may not follow: 403 and `AH00037` (core.c), with the link and why. */
  function refuseLink(ctx: RequestContext, { link, reason }: Refusal): void {
    const { res } = ctx;
    ctx.log('core', 'error', `AH00037: ${LINK_REFUSED}: ${link} (${reason})`);
    clearFileFields(res);
    ctx.sendErrorPage(403);
  }

  /**
   * The file send will open for a URL path, for the link check; undefined where send refuses the path
   * itself (bad escape, NUL, `..`, a dotfile), so those keep send's answer.
   */
  function linkCheckedFileFor(urlPath: string): string | undefined {
    let decoded: string;
    try {
      decoded = decodeURIComponent(servedName(urlPath));
    } catch {
      return undefined;
    }
    if (decoded.includes('\0')) return undefined;
    const segments = decoded.split('/');
    if (segments.includes('..')) return undefined;
    if (dotfilesOf(urlPath) === 'ignore' && segments.some((segment) => segment.startsWith('.'))) return undefined;
    return join(root, decoded);
  }

  /**
   * Once send has opened the file, and before a byte is read: is it the one the check allowed? A link
   * swapped in meanwhile makes it another file, and the stream fails with the refusal.
   */
  function verifyOpened(stream: ReadStream, file: () => string | undefined, verdict: LinkVerdict | undefined): void {
    if (!verdict) return;
    stream.once('open', (fd: number) => {
      const swapped = links.openedAs(fd, file() ?? '', verdict);
      if (swapped) stream.destroy(new LinkRefusedError(swapped));
    });
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
      if (!sibling?.isFile()) continue;
      // A sibling behind a link that may not be followed is as good as absent (the cache agrees).
      const verdict = links.mode === 'on' ? undefined : await links.check(`${file}${SUFFIX[coding]}`);
      if (verdict?.follow !== false) return { coding, file, original, verdict };
    }
    return undefined;
  }

  function serveCached(ctx: RequestContext, entry: Extract<CacheEntry, { kind: 'file' }>, negotiated?: Negotiated): void {
    const { req, res } = ctx;
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

  return function serveStatic(ctx: RequestContext, urlPath: string, negotiated?: Negotiated): void {
    const { req } = ctx;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      ctx.log('core', 'info', `Method ${req.method} not allowed for ${urlPath}`);
      ctx.sendErrorPage(405, { Allow: ALLOWED_METHODS });
      return;
    }
    const cached = cache.get(urlPath);
    if (cached?.kind === 'missing') return notFound(ctx, cached.file);
    // Ranges and preconditions are rare: send answers them from the file.
    const sendOnly = SEND_ONLY_HEADERS.some((name) => req.headers[name] !== undefined);
    if (cached?.kind === 'file' && !sendOnly) return serveCached(ctx, cached, negotiated);

    const version = cache.version;
    const file = links.mode === 'on' ? undefined : linkCheckedFileFor(urlPath);
    if (file === undefined) return fromDiskOrSibling(ctx, urlPath, version, undefined, negotiated);
    links.check(file).then(
      (verdict) => {
        if (!verdict.follow) return refuseLink(ctx, verdict);
        fromDiskOrSibling(ctx, urlPath, version, verdict, negotiated);
      },
      (err: SendError) => fail(ctx, urlPath, err, version),
    );
  };

  /** A file not answered from memory: its precompressed sibling when the client takes one, else the file. */
  function fromDiskOrSibling(
    ctx: RequestContext,
    urlPath: string,
    version: number,
    verdict: LinkVerdict | undefined,
    negotiated?: Negotiated,
  ): void {
    const { req, res } = ctx;
    const type = negotiated && typeOf(urlPath);
    if (!negotiated || !isCompressible(type)) return fromDisk(ctx, urlPath, version, verdict);
    // Set before send looks, so its 304, its 206 and the uncoded answer carry it too.
    res.setHeader('Vary', 'Accept-Encoding');
    if (negotiated.codings.length === 0) return fromDisk(ctx, urlPath, version, verdict, negotiated);
    precompressed(urlPath, negotiated.codings).then(
      (found) => {
        if (!found) return fromDisk(ctx, urlPath, version, verdict, negotiated);
        res.setHeader('Content-Type', type as string);
        res.setHeader('Content-Encoding', found.coding);
        let opened: string | undefined;
        send(req, `${servedName(urlPath)}${SUFFIX[found.coding]}`, {
          root,
          dotfiles: dotfilesOf(urlPath),
          index: false,
          acceptRanges: false,
        })
          .on('error', (err: SendError) => fail(ctx, urlPath, err, version))
          .on('file', (path: string) => (opened = path))
          .on('stream', (stream: ReadStream) => {
            verifyOpened(stream, () => opened, found.verdict);
            if (res.statusCode !== 200) return;
            void cache.rememberFile(urlPath, found.file, identityHeaders(res.getHeaders(), found.original), version);
          })
          .pipe(res);
      },
      (err: SendError) => fail(ctx, urlPath, err, version),
    );
  }

  /**
   * send reads the file; a compressible one goes through the encoder (answerSink.ts) when `negotiated`
   * allows it: send is given a view of the response whose head and body go there.
   */
  function fromDisk(ctx: RequestContext, urlPath: string, version: number, verdict: LinkVerdict | undefined, negotiated?: Negotiated) {
    const { req, res } = ctx;
    const sendOnly = SEND_ONLY_HEADERS.some((name) => req.headers[name] !== undefined);
    const encoding = negotiated && responseWritingTo(res, new EncodingSink(ctx, negotiated, { flushEachTurn: false }));
    let file: string | undefined;
    send(req, urlPath, { root, dotfiles: dotfilesOf(urlPath), index: ['index.html'] })
      .on('error', (err: SendError) => fail(ctx, urlPath, err, version))
      .on('file', (path: string) => (file = path))
      .on('directory', () => redirectToDirectory(res, urlPath))
      .on('stream', (stream: ReadStream) => {
        encoding?.reads(stream);
        verifyOpened(stream, () => file, verdict);
        if (file && res.statusCode === 200 && !sendOnly) {
          // The head before any encoding: that is written with the first bytes, after this.
          const headers = withoutServerFields(res.getHeaders());
          delete headers.vary;
          void cache.rememberFile(urlPath, file, headers, version);
        }
      })
      .pipe(encoding ? encoding.view : res);
  }
}
