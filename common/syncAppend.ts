// A writable stream that appends to an open file with write(2) on the calling thread, as nginx writes its
// logs. Node's fs.WriteStream sends each write to the libuv thread pool instead: under load that cost
// the proxy more CPU in queueing and waking threads than the writes themselves (docs/benchmarks.md).
// A log line is short and the file local; a disk that blocks would block nginx the same way. Only for
// regular files: a log that is a pipe (/dev/stdout under a container) keeps fs.WriteStream (lineLog.ts).
import { closeSync, writeSync, writevSync } from 'node:fs';
import { Writable } from 'node:stream';

/** Writes every byte of `chunks`: a regular file takes them in one call, but a short write is finished here. */
function writeAll(fd: number, chunks: Buffer[]): void {
  const written = chunks.length === 1 ? writeSync(fd, chunks[0]) : writevSync(fd, chunks);
  const total = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  if (written === total) return;
  const data = Buffer.concat(chunks);
  for (let offset = written; offset < total;) offset += writeSync(fd, data, offset);
}

/**
 * Appends to `fd` (opened with 'a'; a regular file: a pipe could block the process), and closes it when
 * the stream ends. A failed write (disk full, EIO) goes to `report` once until a write succeeds again, and
 * the stream goes on: a log must never end the process, nor flood stderr.
 */
export function syncAppendStream(fd: number, report: (err: Error) => void): Writable {
  let failing: string | undefined;
  const write = (chunks: Buffer[], done: () => void) => {
    try {
      writeAll(fd, chunks);
      failing = undefined;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      if (code !== failing) report(err as Error);
      failing = code;
    }
    done();
  };
  return new Writable({
    write: (chunk: Buffer, _encoding, done) => write([chunk], done),
    writev: (chunks, done) =>
      write(
        chunks.map(({ chunk }) => chunk as Buffer),
        done,
      ),
    destroy(err, done) {
      try {
        closeSync(fd);
      } catch (closeErr) {
        report(closeErr as Error);
      }
      done(err);
    },
  });
}
