// Compression of answers, as nginx's gzip and Caddy's encode do it: the coding is chosen from the
// client's Accept-Encoding (q-values, br before gzip when equal), and a response is encoded on its way out
// when its type compresses well and nothing says it must not be touched. Here: the negotiation, what a head
// allows, and the encoders; the answer goes through them by the seam in answerSink.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import {
  brotliCompress,
  brotliCompressSync,
  constants,
  createBrotliCompress,
  createGzip,
  gzip,
  gzipSync,
  type BrotliOptions,
  type ZlibOptions,
} from 'node:zlib';
import type { ContentCoding } from '../../common/settings.ts';

/** The codings this proxy makes, in its order of preference when the client weighs them the same. */
export const PREFERENCE: readonly ContentCoding[] = ['br', 'gzip'];

/** The file suffix of a precompressed sibling (nginx gzip_static, Caddy precompressed). */
export const SUFFIX: Readonly<Record<ContentCoding, string>> = { br: '.br', gzip: '.gz' };

/**
 * Bodies shorter than this go as they are (nginx gzip_min_length, Caddy minimum_length 512): with the
 * head, a body under 1 KB fits one TCP segment (MSS 1,460) either way, so compressing it saves no
 * packet and costs a zlib stream and the coding's own header and trailer.
 */
export const MIN_LENGTH = 1024;

/** What SIGHUP may change while the proxy runs: the codings --compression allows, none when off. */
export interface CompressionSettings {
  codings: readonly ContentCoding[];
}

// ── negotiation ──────────────────────────────────────────────────────────────────────────────────

/** `q` of one Accept-Encoding member: 0 to 1, at most three decimals (RFC 9110 §12.4.2); NaN if malformed. */
function weightOf(params: string[]): number {
  for (const param of params) {
    const [name, value] = param.split('=', 2).map((s) => s.trim());
    if (name.toLowerCase() === 'q') return /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(value ?? '') ? Number(value) : NaN;
  }
  return 1;
}

/**
 * The codings this Accept-Encoding lets the answer use, the client's favourite first (RFC 9110 §12.5.3):
 * an explicit member, else `*`, gives a coding its weight; q=0 refuses it; a coding is usable when weighed
 * at least as much as identity, when identity has a weight; equal weights go in this proxy's order (br, then gzip). No field means no
 * coding (what browsers that want one always send). When every coding is refused, even with
 * `identity;q=0`, the answer goes uncoded rather than 406, as nginx and Caddy do.
 */
export function acceptableCodings(acceptEncoding: string | undefined, allowed: readonly ContentCoding[]): ContentCoding[] {
  if (!acceptEncoding || allowed.length === 0) return [];
  const weights = new Map<string, number>();
  for (const member of acceptEncoding.split(',')) {
    const [token, ...params] = member.split(';');
    const name = token.trim().toLowerCase();
    const weight = weightOf(params);
    if (name === '' || Number.isNaN(weight)) continue;
    // x-gzip is gzip (RFC 9110 §8.4.1.3); the first mention of a name counts.
    const key = name === 'x-gzip' ? 'gzip' : name;
    if (!weights.has(key)) weights.set(key, weight);
  }
  const star = weights.get('*');
  const weigh = (name: string, otherwise: number) => weights.get(name) ?? star ?? otherwise;
  // Identity is always acceptable unless refused, but weighs against the codings only when the client
  // gave it a weight (itself or through `*`): `gzip;q=0.5` asks for gzip.
  const identity = weigh('identity', 0);
  return PREFERENCE.filter((coding) => allowed.includes(coding) && weigh(coding, 0) > 0 && weigh(coding, 0) >= identity).sort(
    (a, b) => weigh(b, 0) - weigh(a, 0),
  );
}

/** The coding to answer with, or undefined for none. */
export function negotiate(acceptEncoding: string | undefined, allowed: readonly ContentCoding[]): ContentCoding | undefined {
  return acceptableCodings(acceptEncoding, allowed)[0];
}

// ── what compresses ──────────────────────────────────────────────────────────────────────────────

/** Types that are text underneath (h5bp's list for nginx, Caddy's defaults); images and fonts that are compressed already are not. */
const COMPRESSIBLE_TYPES = new Set([
  'application/json',
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'application/xml',
  'application/wasm',
  'application/vnd.ms-fontobject',
  'image/svg+xml',
  'image/x-icon',
  'image/vnd.microsoft.icon',
  'image/bmp',
  'font/ttf',
  'font/otf',
]);

/** Whether a Content-Type is worth compressing: text/*, the types above, and any +json or +xml type. */
export function isCompressible(contentType: unknown): boolean {
  if (typeof contentType !== 'string') return false;
  const semicolon = contentType.indexOf(';');
  const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return type.startsWith('text/') || COMPRESSIBLE_TYPES.has(type) || type.endsWith('+json') || type.endsWith('+xml');
}

/** RFC 9110 §7.7: a proxy must not change the content of a response that says no-transform. */
function forbidsTransform(cacheControl: unknown): boolean {
  return typeof cacheControl === 'string' && /(^|,)\s*no-transform\s*(,|$)/i.test(cacheControl);
}

/** Adds Accept-Encoding to the response's Vary, once. */
export function varyOnEncoding(res: Pick<ServerResponse, 'getHeader' | 'setHeader'>): void {
  const vary = res.getHeader('vary');
  if (vary === undefined) return void res.setHeader('Vary', 'Accept-Encoding');
  const text = Array.isArray(vary) ? vary.join(', ') : String(vary);
  if (text.trim() === '*' || /(^|,)\s*accept-encoding\s*(,|$)/i.test(text)) return;
  res.setHeader('Vary', `${text}, Accept-Encoding`);
}

/**
 * The coding a head allows, after setting the head for it (and the identity length it declared): a status
 * with a body (not 204, 206, 304, 1xx), a compressible type, no Content-Encoding or Content-Range already,
 * no `Cache-Control: no-transform`, and a length unknown or at least MIN_LENGTH. Then the head gets
 * Content-Encoding, the variant's ETag, no Content-Length or Accept-Ranges. Every compressible answer gets
 * `Vary: Accept-Encoding`, encoded or not; a 304 to a client revalidating its encoded copy names that variant.
 */
export function encodedHead(
  res: Pick<ServerResponse, 'getHeader' | 'setHeader' | 'removeHeader'>,
  negotiated: Negotiated,
  status: number,
): { coding: ContentCoding; length: number | undefined } | undefined {
  if (status === 304) {
    const etag = res.getHeader('etag');
    if (negotiated.revalidating && typeof etag === 'string') {
      res.setHeader('ETag', variantEtag(etag, negotiated.revalidating));
      varyOnEncoding(res);
    }
    return undefined;
  }
  if (res.getHeader('content-encoding') !== undefined || !isCompressible(res.getHeader('content-type'))) return undefined;
  varyOnEncoding(res);
  const coding = negotiated.codings[0];
  if (coding === undefined || status < 200 || status === 204 || status === 206) return undefined;
  if (res.getHeader('content-range') !== undefined || forbidsTransform(res.getHeader('cache-control'))) return undefined;
  const declared = res.getHeader('content-length');
  const length = declared === undefined ? undefined : Number(declared);
  if (length !== undefined && length < MIN_LENGTH) return undefined;
  res.setHeader('Content-Encoding', coding);
  res.removeHeader('Content-Length');
  res.removeHeader('Accept-Ranges');
  const etag = res.getHeader('etag');
  if (typeof etag === 'string') res.setHeader('ETag', variantEtag(etag, coding));
  return { coding, length };
}

// ── validators ───────────────────────────────────────────────────────────────────────────────────

/**
 * The ETag of the `coding` variant of a representation whose ETag is `etag`: the coding inside the quotes
 * (Apache's `-gzip`), and weak, as nginx makes it: the bytes depend on where a stream was flushed.
 */
export function variantEtag(etag: string, coding: ContentCoding): string {
  const opaque = etag.replace(/^W\//, '');
  return opaque.startsWith('"') && opaque.endsWith('"') ? `W/${opaque.slice(0, -1)}-${coding}"` : etag;
}

const VARIANT_TAG = /(W\/)?"([^"]*)-(gzip|br)"/g;

/**
 * An If-None-Match naming encoded variants, turned into the ETags of the representations they encode, so
 * whatever checks it (send, the cache, the host's controller) compares its own ETag; and the coding the
 * client named, for the 304's ETag. Undefined when no variant is named.
 */
export function originalTags(ifNoneMatch: string): { tags: string; coding: ContentCoding } | undefined {
  let coding: ContentCoding | undefined;
  const tags = ifNoneMatch.replace(VARIANT_TAG, (_all, weak: string | undefined, opaque: string, named: ContentCoding) => {
    coding ??= named;
    return `${weak ?? ''}"${opaque}"`;
  });
  return coding === undefined ? undefined : { tags, coding };
}

// ── encoders ─────────────────────────────────────────────────────────────────────────────────────

/** Brotli's quality for answers encoded as they go: see brotliParams. */
export const BROTLI_ON_THE_FLY_QUALITY = 2;

/**
 * Levels for answers encoded as they go (controllers, files not held in memory): gzip 6 (zlib's default,
 * Apache's, Caddy's and the bench's nginx) and brotli 2. Measured on this machine (docs/benchmarks.md),
 * brotli 2 makes smaller output than gzip 6 on JSON, JavaScript and HTML (7 KB JSON: 906 bytes against
 * 1,065) for about half its CPU; brotli 4 is no smaller on JSON for 1.5 to 2 times brotli 2's cost, and
 * brotli's default (11) costs ten times more. The window is at most 512 KB (ngx_brotli's default) instead
 * of 4 MB, bounding each stream's memory, and no longer than a declared length needs.
 */
function brotliParams(
  length: number | undefined,
  bits = length === undefined ? 19 : windowBits(length, constants.BROTLI_MIN_WINDOW_BITS, 19),
) {
  const params: Record<number, number> = {
    [constants.BROTLI_PARAM_QUALITY]: BROTLI_ON_THE_FLY_QUALITY,
    [constants.BROTLI_PARAM_LGWIN]: bits,
    [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
  };
  if (length !== undefined) params[constants.BROTLI_PARAM_SIZE_HINT] = length;
  return params;
}

/**
 * The smallest window of at least `min` bits (and at most `max`) that holds a body of `length` bytes, as
 * nginx's gzip filter sizes it for a declared length: a 7 KB body then needs an 8 KB window and the
 * encoder allocates and clears a sixteenth of zlib's default state, for the same output (a window longer
 * than the body finds no more matches).
 */
function windowBits(length: number, min: number, max: number): number {
  let bits = min;
  while (bits < max && 1 << bits < length + 262) bits += 1;
  return bits;
}

/** gzip's options for a body of a declared length: nginx's wbits and memLevel reductions (ngx_http_gzip_filter_module). */
function gzipOptions(length: number | undefined): ZlibOptions {
  if (length === undefined) return GZIP_STREAM;
  const bits = windowBits(length, 9, 15);
  return (GZIP_BY_BITS[bits] ??= { level: 6, windowBits: bits, memLevel: Math.max(1, 8 - (15 - bits)) });
}

const GZIP_STREAM: ZlibOptions = { level: 6 };
/** Options by window size, made once, so an answer encoded in one call allocates none. */
const GZIP_BY_BITS: ZlibOptions[] = [];
const BROTLI_BY_BITS: BrotliOptions[] = [];

export function streamEncoder(coding: ContentCoding, length: number | undefined): Transform {
  return coding === 'gzip' ? createGzip(gzipOptions(length)) : createBrotliCompress({ params: brotliParams(length) });
}

/** The flush that makes what was written so far decodable without resetting the compression state. */
export const FLUSH: Readonly<Record<ContentCoding, number>> = { br: constants.BROTLI_OPERATION_FLUSH, gzip: constants.Z_SYNC_FLUSH };

/**
 * A body of a declared length up to this is collected and encoded in one synchronous call, as nginx
 * compresses in its worker's event loop: for a 7 KB JSON answer a zlib stream per answer cost about twice
 * the compression itself, and one call on libuv's thread pool still 100 (gzip) to 200 µs (br) more than
 * doing it here. The loop is held at most about 1 ms (64 KB at gzip 6); larger bodies stream.
 */
export const ONE_CALL_MAX = 64 * 1024;

export function encodeInOneCall(coding: ContentCoding, body: Buffer): Buffer {
  if (coding === 'gzip') return gzipSync(body, gzipOptions(body.length));
  // The window fitted to the body already; brotli's size hint changes nothing at this quality.
  const bits = windowBits(body.length, constants.BROTLI_MIN_WINDOW_BITS, 19);
  return brotliCompressSync(body, (BROTLI_BY_BITS[bits] ??= { params: brotliParams(undefined, bits) }));
}

/**
 * A small file's encoded form, made once and kept with it (StaticCache): the strongest levels, since the
 * cost is paid once per change of the file, on libuv's thread pool (64 KB of JavaScript: brotli 11 about
 * 30 ms, gzip 9 under 1 ms), and every later answer is smaller.
 */
export function encodeOnce(coding: ContentCoding, body: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, out: Buffer) => (err ? reject(err) : resolve(out));
    if (coding === 'gzip') gzip(body, { level: 9 }, done);
    else
      brotliCompress(
        body,
        {
          params: {
            [constants.BROTLI_PARAM_QUALITY]: 11,
            [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
            [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          },
        },
        done,
      );
  });
}

// ── the request ──────────────────────────────────────────────────────────────────────────────────

/** What a request asks of the encoding of its answer, found before anything answers it. */
export interface Negotiated {
  /** The codings the answer may use, the client's favourite first; none for a range. */
  codings: ContentCoding[];
  /** The coding the client named in If-None-Match (its cached variant), for a 304's ETag. */
  revalidating: ContentCoding | undefined;
  /** If-None-Match as the client sent it, for comparing with a precompressed file's own ETag. */
  ifNoneMatch: string | undefined;
}

/**
 * Reads the request's Accept-Encoding and rewrites an If-None-Match that names encoded variants (see
 * originalTags) before the request is checked by anything. Nothing is done when compression is off.
 */
export function negotiateRequest(req: IncomingMessage, settings: CompressionSettings): Negotiated | undefined {
  if (settings.codings.length === 0) return undefined;
  const ifNoneMatch = req.headers['if-none-match'];
  const original = ifNoneMatch === undefined ? undefined : originalTags(ifNoneMatch);
  if (original) req.headers['if-none-match'] = original.tags;
  // A range is of the identity representation: never encoded (nginx, Caddy and Apache agree).
  const codings = req.headers.range === undefined ? acceptableCodings(req.headers['accept-encoding'], settings.codings) : [];
  return { codings, revalidating: original?.coding, ifNoneMatch };
}
