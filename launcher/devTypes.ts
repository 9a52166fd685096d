// Starts `extqs dev`'s type check (launcher/typeWatch.ts) in a thread of the launcher: the compiler's
// work never runs on a thread that serves, and no process is added to the host's and the proxy's.
import { Worker } from 'node:worker_threads';
import { siblingFile } from '../common/entryFile.ts';
import type { TypeWatchData } from './typeWatch.ts';

export interface TypeWatch {
  stop(): Promise<void>;
}

/** `onFailure` hears why the thread stopped, if it fails: serving goes on without the check. */
export function watchTypes(data: TypeWatchData, onFailure: (message: string) => void): TypeWatch {
  const worker = new Worker(siblingFile(import.meta.url, 'typeWatch'), { workerData: data });
  worker.on('error', (err) => onFailure(`the type check stopped: ${err.stack ?? err.message}`));
  return {
    async stop() {
      await worker.terminate();
    },
  };
}
