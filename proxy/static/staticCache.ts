// Small files of www/public and the paths found missing there, kept in memory so the hot static paths
// (a 1.4 KB page, the favicon browsers keep asking for) cost no stat/open/read/close round trips through
// libuv's thread pool (profiled: about a third of the proxy's time on those paths). chokidar watches the
// directory; any change there empties the cache, at once and again shortly after: chokidar drops a
// 'change' that follows another within 50 ms and sends no trailing one (host/worker/watcher.ts has the same).
//
// A compressible file keeps its encoded forms beside it, made when it is remembered: a precompressed
// sibling (file.br, file.gz) when there is one, else the body compressed once. They go when it goes.
//
// Every file is read through the root's LinkGuard (--follow-symlinks), so an entry holds only bytes a
// request may be served; a hit costs no link check, as the entry was judged when it was read.
import type { Stats } from 'node:fs';
import type { OutgoingHttpHeaders } from 'node:http';
import { stat } from 'node:fs/promises';
import { watch, type FSWatcher } from 'chokidar';
import { LinkGuard, LinkRefusedError } from '../../common/linkGuard.ts';
import { CONTENT_CODINGS, type ContentCoding } from '../../common/settings.ts';
import { encodeOnce, isCompressible, MIN_LENGTH, SUFFIX, variantEtag } from '../core/compression.ts';

/** A file's body in one coding, with the head that goes with it. */
export interface Encoded {
  headers: OutgoingHttpHeaders;
  body: Buffer;
}

export type CacheEntry =
  | {
      kind: 'file';
      headers: OutgoingHttpHeaders;
      body: Buffer;
      /** The body in each coding, with `Vary: Accept-Encoding` in its head (only compressible files have them). */
      encoded?: Partial<Record<ContentCoding, Encoded>>;
      /** `headers` with `Vary: Accept-Encoding`, made on first use while compression is on (not per answer). */
      varying?: OutgoingHttpHeaders;
    }
  /** `file` is the absolute path that was not found, for the error log. */
  | { kind: 'missing'; file: string };

export interface StaticCacheOptions {
  maxFileBytes: number;
  maxFiles: number;
  maxTotalBytes: number;
  maxMisses: number;
  /** The root's --follow-symlinks guard, shared with the files it serves from disk. */
  links: LinkGuard;
}

/** Longer than chokidar's 50 ms change throttle. */
const TRAILING_CLEAR_MS = 75;

const DEFAULTS = { maxFileBytes: 64 * 1024, maxFiles: 1024, maxTotalBytes: 32 * 1024 * 1024, maxMisses: 4096 };

/**
 * Only paths without escapes are kept: `send` decodes `%2f` and normalises, so `/css%2fsite.css`,
 * `/css%2f%2fsite.css`, … are endless names for one file, each of which would hold its own copy.
 */
function cacheable(urlPath: string): boolean {
  return !urlPath.includes('%');
}

/** The ETag `send` gives a file (its `etag` dependency's form for a Stats), so a form read here matches one served from disk. */
export function statEtag(stats: Pick<Stats, 'size' | 'mtime'>): string {
  return `W/"${stats.size.toString(16)}-${stats.mtime.getTime().toString(16)}"`;
}

function refusedAsAbsent(err: unknown): undefined {
  if (err instanceof LinkRefusedError) return undefined;
  throw err;
}

function entryBytes(entry: Extract<CacheEntry, { kind: 'file' }>): number {
  return entry.body.length + Object.values(entry.encoded ?? {}).reduce((sum, form) => sum + form.body.length, 0);
}

/**
 * Each coding's form of a file: its precompressed sibling with that file's own validators, as `send`
 * serves it from disk; else the body compressed here, under the variant of the file's ETag.
 */
async function encodedForms(
  file: string,
  headers: OutgoingHttpHeaders,
  body: Buffer,
  links: LinkGuard,
): Promise<Partial<Record<ContentCoding, Encoded>>> {
  const forms: Partial<Record<ContentCoding, Encoded>> = {};
  const common: OutgoingHttpHeaders = { ...headers, vary: 'Accept-Encoding' };
  delete common['accept-ranges']; // a range is only ever of the identity form
  await Promise.all(
    CONTENT_CODINGS.map(async (coding) => {
      const sibling = `${file}${SUFFIX[coding]}`;
      const stats = await stat(sibling).catch(() => undefined);
      // A sibling behind a link that may not be followed is as good as absent: the body is compressed here.
      const encoded = stats?.isFile() ? await links.readFile(sibling).catch(refusedAsAbsent) : undefined;
      if (stats && encoded) {
        if (encoded.length !== stats.size) throw new Error(`${sibling} changed while read`);
        forms[coding] = {
          headers: {
            ...common,
            'content-encoding': coding,
            'content-length': String(encoded.length),
            etag: statEtag(stats),
            'last-modified': stats.mtime.toUTCString(),
          },
          body: encoded,
        };
        return;
      }
      const made = await encodeOnce(coding, body);
      const etag = typeof headers.etag === 'string' ? variantEtag(headers.etag, coding) : undefined;
      forms[coding] = {
        headers: { ...common, 'content-encoding': coding, 'content-length': String(made.length), ...(etag && { etag }) },
        body: made,
      };
    }),
  );
  return forms;
}

export class StaticCache {
  private readonly files = new Map<string, Extract<CacheEntry, { kind: 'file' }>>();
  // Kept apart from the files, so a flood of distinct missing paths cannot push the hot files out.
  private readonly misses = new Map<string, Extract<CacheEntry, { kind: 'missing' }>>();
  private totalBytes = 0;
  /** Bumped on every change seen, so what was looked up before a change is not stored after it. */
  private generation = 0;
  private watcher: FSWatcher | undefined;
  private trailingClear: NodeJS.Timeout | undefined;
  /** Without a working watcher nothing would ever be invalidated: the cache switches itself off. */
  private disabled = false;
  private readonly options: StaticCacheOptions;

  constructor(
    private readonly root: string,
    options: Partial<StaticCacheOptions> = {},
  ) {
    this.options = { ...DEFAULTS, links: options.links ?? new LinkGuard(root, 'owner'), ...options };
  }

  get links(): LinkGuard {
    return this.options.links;
  }

  /** Starts watching the root; resolves once chokidar has scanned it. */
  async watch(onError: (err: unknown) => void): Promise<void> {
    // Following links would have chokidar walk whatever a link points at (a link to / walks the disk):
    // only when they are all followed does a change behind one concern the cache.
    const followSymlinks = this.links.mode === 'on';
    this.watcher = watch(followSymlinks ? this.root : this.links.realRoot, { ignoreInitial: true, followSymlinks });
    this.watcher
      .on('all', () => {
        this.clear();
        clearTimeout(this.trailingClear);
        this.trailingClear = setTimeout(() => this.clear(), TRAILING_CLEAR_MS);
      })
      .on('error', (err) => {
        this.disabled = true;
        this.clear();
        onError(err);
      });
    await new Promise<void>((resolve) => this.watcher!.once('ready', resolve));
  }

  get(urlPath: string): CacheEntry | undefined {
    return this.files.get(urlPath) ?? this.misses.get(urlPath);
  }

  /** Taken before a lookup on disk; the result is stored only if nothing changed since. */
  get version(): number {
    return this.generation;
  }

  clear(): void {
    this.generation += 1;
    this.files.clear();
    this.misses.clear();
    this.totalBytes = 0;
  }

  rememberMissing(urlPath: string, file: string, version: number): void {
    if (this.disabled || version !== this.generation || !cacheable(urlPath)) return;
    if (this.misses.size >= this.options.maxMisses) this.misses.delete(this.misses.keys().next().value!);
    this.misses.set(urlPath, { kind: 'missing', file });
  }

  /**
   * Reads `file` (which `send` has just served with `headers`) and keeps it, if small and unchanged.
   * Settles once it is kept or dropped (never rejects): the server does not wait for it, the tests do.
   */
  rememberFile(urlPath: string, file: string, headers: OutgoingHttpHeaders, version: number): Promise<void> {
    const size = Number(headers['content-length']);
    if (this.disabled || version !== this.generation || !cacheable(urlPath) || !(size <= this.options.maxFileBytes)) {
      return Promise.resolve();
    }
    return this.links
      .readFile(file)
      .then(async (body) => {
        const compressible = isCompressible(headers['content-type']) && body.length >= MIN_LENGTH && body.length === size;
        return { body, encoded: compressible ? await encodedForms(file, headers, body, this.links) : undefined };
      })
      .then(
        ({ body, encoded }) => {
          // A change seen meanwhile, or a file that no longer matches the headers sent: do not keep it.
          if (this.disabled || version !== this.generation || body.length !== size || this.files.has(urlPath)) return;
          const bytes = size + Object.values(encoded ?? {}).reduce((sum, form) => sum + form.body.length, 0);
          while (
            this.files.size > 0 &&
            (this.files.size >= this.options.maxFiles || this.totalBytes + bytes > this.options.maxTotalBytes)
          ) {
            const [oldest, entry] = this.files.entries().next().value!;
            this.files.delete(oldest);
            this.totalBytes -= entryBytes(entry);
          }
          if (bytes > this.options.maxTotalBytes) return;
          this.files.set(urlPath, { kind: 'file', headers, body, encoded });
          this.totalBytes += bytes;
        },
        () => {},
      );
  }

  async close(): Promise<void> {
    clearTimeout(this.trailingClear);
    await this.watcher?.close();
  }
}
