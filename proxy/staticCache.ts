// Small files of www/public and the paths found missing there, kept in memory so the hot static paths
// (a 1.4 KB page, the favicon browsers keep asking for) cost no stat/open/read/close round trips through
// libuv's thread pool (profiled: about a third of the proxy's time on those paths). chokidar watches the
// directory; any change there empties the cache.
import type { OutgoingHttpHeaders } from 'node:http';
import { readFile } from 'node:fs/promises';
import { watch, type FSWatcher } from 'chokidar';

export type CacheEntry =
  | { kind: 'file'; headers: OutgoingHttpHeaders; body: Buffer }
  /** `file` is the absolute path that was not found, for the error log. */
  | { kind: 'missing'; file: string };

export interface StaticCacheOptions {
  maxFileBytes: number;
  maxEntries: number;
}

export class StaticCache {
  private readonly entries = new Map<string, CacheEntry>();
  /** Bumped on every change seen, so a read that raced with a change is not stored. */
  private generation = 0;
  private watcher: FSWatcher | undefined;
  /** Without a working watcher nothing would ever be invalidated: the cache switches itself off. */
  private disabled = false;

  constructor(
    private readonly root: string,
    private readonly options: StaticCacheOptions = { maxFileBytes: 64 * 1024, maxEntries: 4096 },
  ) {}

  /** Starts watching the root; resolves once chokidar has scanned it. */
  async watch(onError: (err: unknown) => void): Promise<void> {
    this.watcher = watch(this.root, { ignoreInitial: true });
    this.watcher
      .on('all', () => this.clear())
      .on('error', (err) => {
        this.disabled = true;
        this.clear();
        onError(err);
      });
    await new Promise<void>((resolve) => this.watcher!.once('ready', resolve));
  }

  get(urlPath: string): CacheEntry | undefined {
    return this.entries.get(urlPath);
  }

  get enabled(): boolean {
    return !this.disabled;
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
  }

  rememberMissing(urlPath: string, file: string): void {
    this.store(urlPath, { kind: 'missing', file });
  }

  /** Reads `file` (which `send` has just served with `headers`) and keeps it, if small and unchanged. */
  rememberFile(urlPath: string, file: string, headers: OutgoingHttpHeaders): void {
    const size = Number(headers['content-length']);
    if (!(size <= this.options.maxFileBytes)) return;
    const generation = this.generation;
    readFile(file).then(
      (body) => {
        // A change seen meanwhile, or a file that no longer matches the headers sent: do not keep it.
        if (generation === this.generation && body.length === size) this.store(urlPath, { kind: 'file', headers, body });
      },
      () => {},
    );
  }

  private store(urlPath: string, entry: CacheEntry): void {
    if (this.disabled) return;
    // Bounded against clients asking for endless distinct missing paths: the oldest entry goes.
    if (this.entries.size >= this.options.maxEntries && !this.entries.has(urlPath)) {
      this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(urlPath, entry);
  }

  async close(): Promise<void> {
    await this.watcher?.close();
  }
}
