// A writable stream that appends to an open file with write(2) on the calling thread, as nginx writes its
// logs. Node's fs.WriteStream sends each write to the libuv thread pool instead: under load that cost
// the proxy more CPU in queueing and waking threads than the writes themselves (README, Performance).
// A log line is short and the file is local; a disk that blocks would block nginx the same way.
import { closeSync, writeSync, writevSync } from 'node:fs';
import { Writable } from 'node:stream';

/** Writes every byte of `chunks`: a regular file takes them in one call, but a short write is finished here. */
function writeAll(fd: number, chunks: Buffer[]): void {
  const written = chunks.length === 1 ? writeSync(fd, chunks[0]) : writevSync(fd, chunks);
  const total = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  if (written === total) return;
  const data = Buffer.concat(chunks);
  for (let offset = written; offset < total; ) offset += writeSync(fd, data, offset);
}

/**
 * Appends to `fd` (opened with 'a'), and closes it when the stream ends. A failed write (disk full, EIO)
 * goes to `report` and the stream goes on: a log must never end the process.
 */
export function syncAppendStream(fd: number, report: (err: Error) => void): Writable {
  const write = (chunks: Buffer[], done: () => void) => {
    try {
      writeAll(fd, chunks);
    } catch (err) {
      report(err as Error);
    }
    done();
  };
  return new Writable({
    write: (chunk: Buffer, _encoding, done) => write([chunk], done),
    writev: (chunks, done) => write(chunks.map(({ chunk }) => chunk as Buffer), done),
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
