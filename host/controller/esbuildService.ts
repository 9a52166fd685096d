// esbuild's service: a child process (about 10-20 MB) that esbuild's API starts at its first call and keeps.
// Controllers compile at start and on a change, then not for hours: the service is stopped once nothing has
// compiled for a while, and esbuild starts it again at the next call.
import type * as Esbuild from 'esbuild';

/** How long the service outlives the last compile: a save's burst of events compiles within it. */
export const ESBUILD_IDLE_MS = 10_000;

let running = 0;
let idle: NodeJS.Timeout | undefined;

/** Runs `task` with esbuild's API; the service stops ESBUILD_IDLE_MS after the last task ends. */
export async function withEsbuild<T>(task: (esbuild: typeof Esbuild) => Promise<T>): Promise<T> {
  // Loaded with the first controller: a host with none (the default install) keeps its 10 MB.
  const esbuild = await import('esbuild');
  clearTimeout(idle);
  running++;
  try {
    return await task(esbuild);
  } finally {
    if (--running === 0) {
      // unref: a host stopping does not wait for it (esbuild's child is unref'd too).
      idle = setTimeout(() => void esbuild.stop(), ESBUILD_IDLE_MS).unref();
    }
  }
}
