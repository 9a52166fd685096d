// A proxy worker's access.log and error.log (--proxy-workers > 1): lines go to the primary, which writes
// the files; a turn's lines of both files travel in one message.
import { IpcChannel } from '../common/ipc.ts';
import type { LineLog } from '../common/lineLog.ts';
import type { LineBatch, ProxyPrimarySays, ProxyWorkerSays } from './workerMessages.ts';

/** How long a worker's drain() waits for the primary to confirm it has the lines. */
const FLUSH_TIMEOUT_MS = 5_000;

export type LogFile = 'access.log' | 'error.log';

/** Opens one file's relay; both share the turn's batch. */
export function logRelay(channel: IpcChannel<ProxyWorkerSays, ProxyPrimarySays>): (file: LogFile) => LineLog {
  let batch: LineBatch = { access: [], error: [] };
  let scheduled = false;

  /** The lines not sent yet; written to stderr (the launcher's) when the primary is gone. */
  function take(): LineBatch {
    const taken = batch;
    batch = { access: [], error: [] };
    scheduled = false;
    if (process.connected) return taken;
    for (const line of [...taken.access, ...taken.error]) process.stderr.write(`${line}\n`);
    return { access: [], error: [] };
  }

  return (file) => {
    const lines = () => (file === 'access.log' ? batch.access : batch.error);
    return {
      write(line) {
        lines().push(line);
        if (scheduled) return;
        scheduled = true;
        setImmediate(() => channel.notify('lines', take()));
      },
      // The primary opens the files again; the worker has none.
      reopen: () => true,
      async drain() {
        const rest = take();
        if (!process.connected) return;
        // Past the timeout the worker exits anyway: what the primary did not confirm may be lost.
        await channel.request('flush', rest, FLUSH_TIMEOUT_MS).catch(() => {});
      },
    };
  };
}
