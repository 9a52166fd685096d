// The static cache's entries in unit tests: rememberFile() reads (and compresses) a file asynchronously.
import type { StaticCache } from '../../proxy/staticCache.ts';

/** The entry for `path` once rememberFile() has put it there, polled for up to a second; then what is there. */
export async function cachedEntry(cache: StaticCache, path: string): Promise<ReturnType<StaticCache['get']>> {
  for (let i = 0; i < 200 && !cache.get(path); i++) await new Promise((r) => setTimeout(r, 5));
  return cache.get(path);
}
