// Log entries from a worker to its primary, the one writer of each log file (access.log and error.log
// in the proxy's primary, host.log in the host's): several processes appending to one file cannot
// rotate it by size (each would count only its own bytes) and would each have to reopen it on SIGHUP.
// Entries travel structured, FLUSH_WINDOW's worth of entries of every file in one message (as a file itself is
// written: lineLog.ts), and are formatted where the file is written (deliver()).
import { FLUSH_WINDOW, type FlushWindow } from './lineLog.ts';

/** A FLUSH_WINDOW's worth of entries, by the file they are for. `Files` maps each file to the JSON shape of its entries. */
export type EntryBatch<Files> = { [F in keyof Files]?: Files[F][] };

/** How long a worker's drain() waits for the primary to confirm it has the entries. */
const FLUSH_TIMEOUT_MS = 5_000;

export interface LogRelay<Files> {
  /** The sender of one file's entries; `orphanLine` formats one for stderr (the launcher's) once the primary is gone. */
  to<F extends keyof Files>(file: F, orphanLine: (entry: Files[F]) => string): (entry: Files[F]) => void;
  /** Sends what is queued; resolves once the primary has written it (a worker about to exit), or after a timeout. */
  drain(): Promise<void>;
}

/** The worker's side: `notify` sends a batch, `flush` sends one and resolves when the primary has it. */
export function logRelay<Files>(
  notify: (batch: EntryBatch<Files>) => void,
  flush: (batch: EntryBatch<Files>, timeoutMs: number) => Promise<unknown>,
  window: FlushWindow = FLUSH_WINDOW,
): LogRelay<Files> {
  let batch: EntryBatch<Files> = {};
  let entries = 0;
  let timer: NodeJS.Timeout | undefined;
  const orphanLines: { [F in keyof Files]?: (entry: Files[F]) => string } = {};

  /** The entries not sent yet; written to stderr when the primary is gone. */
  function take(): EntryBatch<Files> {
    const taken = batch;
    batch = {};
    entries = 0;
    clearTimeout(timer);
    if (process.connected) return taken;
    for (const file of Object.keys(taken) as (keyof Files)[]) {
      for (const entry of taken[file] ?? []) process.stderr.write(`${orphanLines[file]?.(entry) ?? JSON.stringify(entry)}\n`);
    }
    return {};
  }

  function send(): void {
    const taken = take();
    if (Object.keys(taken).length > 0) notify(taken);
  }

  return {
    to(file, orphanLine) {
      orphanLines[file] = orphanLine;
      return (entry) => {
        (batch[file] ??= []).push(entry);
        entries += 1;
        if (entries >= window.lines) send();
        else if (entries === 1) timer = setTimeout(send, window.ms);
      };
    },
    async drain() {
      const rest = take();
      if (!process.connected) return;
      // Past the timeout the worker exits anyway: what the primary did not confirm may be lost.
      await flush(rest, FLUSH_TIMEOUT_MS).catch(() => {});
    },
  };
}

/** The primary's side: hands each entry of a batch, file by file, to the writer of its file. */
export function deliver<Files>(batch: EntryBatch<Files>, writers: { [F in keyof Files]: (entry: Files[F]) => void }): void {
  for (const file of Object.keys(batch) as (keyof Files)[]) {
    const write = writers[file];
    for (const entry of batch[file] ?? []) write(entry);
  }
}
