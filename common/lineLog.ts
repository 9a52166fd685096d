// A log file written through winston: callers hand over finished lines (see logFormat.ts), winston does
// the ordered writing to the file, and drain() waits until every line is on disk.
//
// Lines are buffered for FLUSH_WINDOW (10 ms) and go to winston as one message, as nginx's `access_log … flush=`
// and Apache's BufferedLogs do: under load one trip through winston's streams and one write(2) for a
// hundred lines instead of one each (the favicon path spent more time in winston's per-call stream
// machinery than in answering the request).
//
// Rotation by size is done here, logrotate-style: `access.log` is always the current file, `access.log.1`
// the one before, and so on. Not winston's maxsize/maxFiles: in a burst of 500 lines a turn, winston
// 3.19 lost 24% of 20,000 lines across 15 rotations (its rotatedWhileOpening path ends a stream that still
// holds lines), tailable or not. Here a rotation renames the files and then opens a fresh file by name,
// exactly what reopen() does for an external logrotate (SIGHUP). A file deleted under the process (its
// directory removed) is noticed within a second and created again when the directory can be.
import { once } from 'node:events';
import { createWriteStream, fstat, fstatSync, mkdirSync, openSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type winstonModule from 'winston';
import type { Logform } from 'winston';
import { syncAppendStream } from './syncAppend.ts';
import { STANDARD_STREAMS } from './settingParsers.ts';

export interface Rotation {
  /** Bytes after which the file is rotated; 0 = never. A batch's lines (FlushWindow) stay together, so a file may pass it by one batch. */
  maxSize: number;
  /** Rotated files kept beside the current one. */
  maxFiles: number;
}

export const NO_ROTATION: Rotation = Object.freeze({ maxSize: 0, maxFiles: 1 });

/** The rotation part of the log settings (--log-max-size, --log-max-files). */
export function rotationOf(settings: { logMaxSize: number; logMaxFiles: number }): Rotation {
  return { maxSize: settings.logMaxSize, maxFiles: settings.logMaxFiles };
}

export interface LineLog {
  write(line: string): void;
  /**
   * Opens the file again by its name (after logrotate moved it away) with these rotation settings.
   * Lines already handed over finish in the old file. False when the file cannot be opened (said on
   * stderr); the old one is kept.
   */
  reopen(rotation?: Rotation): boolean;
  /** Ends the log and resolves when every line written so far has reached the file. */
  drain(): Promise<void>;
}

/**
 * winston, loaded with the first file opened: a process that only relays its lines (a proxy or host
 * worker) never opens one, and winston with its streams is 4-5 MB of each process's memory.
 */
let winstonLoaded: { winston: typeof winstonModule; messageOnly: Logform.Format } | undefined;
function loadWinston() {
  if (winstonLoaded) return winstonLoaded;
  const winston = createRequire(import.meta.url)('winston') as typeof winstonModule;
  winstonLoaded = { winston, messageOnly: winston.format.printf((info) => String(info.message)) };
  return winstonLoaded;
}
/** When a batch of lines (or relayed entries, logRelay.ts) is written: after `ms`, or at once at `lines`. */
export interface FlushWindow {
  ms: number;
  lines: number;
}

/**
 * 10 ms: flushing every event-loop turn instead cost the proxy 5 µs of a missing controller's 63 (two
 * write(2)s and two trips through winston for the few requests a turn ends); 10 ms cut that to 3 µs
 * (--cpu-prof, wrk; docs/benchmarks.md), a lag nobody tailing a log sees. A process killed outright loses
 * its last 10 ms of lines, as nginx with `flush=` does. 1,000 lines: a burst's batch is written before its
 * time, which bounds what waits in memory.
 */
export const FLUSH_WINDOW: Readonly<FlushWindow> = Object.freeze({ ms: 10, lines: 1_000 });
/** How often the log checks that its file still has a name (was not deleted). */
const DELETED_CHECK_MS = 1_000;

/** One open file: a winston logger writing through a Stream transport to a file this process opened. */
interface Sink {
  fd: number;
  /** Bytes in the file: its size when opened plus what was sent since. */
  size: number;
  send(text: string): void;
  /** Resolves when every message sent has reached the file and the file is closed. */
  end(): Promise<void>;
}

/**
 * Opens `path` for appending, synchronously, and a winston logger on it. Not winston's File transport:
 * it opens its file later, by name, so a file renamed in between (a rotation, logrotate) was opened
 * under its new name and lines landed in the wrong file. Throws when the file cannot be opened.
 */
function openSink(path: string, report: (message: string) => void): Sink {
  mkdirSync(dirname(path), { recursive: true });
  const fd = openSync(path, 'a');
  const stats = fstatSync(fd);
  const size = stats.size;
  // A failed write (disk full, EIO) is said, not thrown: a log must never end the process. A regular file
  // is appended to in place (common/syncAppend.ts); anything else (a pipe) through the thread pool.
  const file = stats.isFile()
    ? syncAppendStream(fd, (err) => report(err.message))
    : createWriteStream(path, { fd, flags: 'a' }).on('error', (err) => report(err.message));
  const { winston, messageOnly } = loadWinston();
  const transport = new winston.transports.Stream({ stream: file });
  // The format belongs on the logger: without one, winston's default json() stringifies every message
  // before the transport formats it again.
  const logger = winston.createLogger({ level: 'info', format: messageOnly, transports: [transport], exitOnError: false });
  logger.on('error', (err: Error) => report(err.message));
  // Messages handed to winston, and those its transport has written ('logged'). winston's logger.end()
  // ends the transport from the logger's _final while messages can still sit in the logger's readable
  // buffer under backpressure; they then fail with "write after end" (seen with bursts of lines). So
  // end() first waits until every message has reached the transport.
  let sent = 0;
  let logged = 0;
  let allLogged: (() => void) | undefined;
  transport.on('logged', () => {
    logged += 1;
    if (logged === sent) allLogged?.();
  });
  let ended: Promise<void> | undefined;
  const sink: Sink = {
    fd,
    size,
    send(text) {
      sent += 1;
      sink.size += Buffer.byteLength(text) + 1;
      logger.info(text);
    },
    end() {
      ended ??= (async () => {
        if (logged < sent) await new Promise<void>((resolve) => (allLogged = resolve));
        const finished = once(transport, 'finish');
        logger.end();
        await finished;
        // Every line is in the file stream now; 'close' comes after its last write and the close(2).
        const closed = once(file, 'close');
        file.end();
        await closed;
      })();
      return ended;
    },
  };
  return sink;
}

/** logrotate's numbering: `file.N` is dropped, `file.N-1` becomes `file.N`, …, `file` becomes `file.1`. */
function shiftRotated(path: string, keep: number): void {
  rmSync(`${path}.${keep}`, { force: true });
  for (let n = keep - 1; n >= 1; n--) {
    try {
      renameSync(`${path}.${n}`, `${path}.${n + 1}`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  renameSync(path, `${path}.1`);
}

/**
 * A file's lines under `--logs -`, as the official httpd image links its logs to /proc/self/fd/1 and /2:
 * the access log on stdout, the others on stderr. Written on the process's own descriptors (a launcher's
 * child has a socket there, which cannot be opened by name), never closed; Node writes pipes, sockets and
 * files synchronously on Linux. A failed write (the reader gone) is said once, not thrown.
 */
function standardStreamSink(file: string, report: (message: string) => void): Sink {
  const stream = file === 'access.log' ? process.stdout : process.stderr;
  if (stream.listenerCount('error') === 0) stream.on('error', (err: Error) => report(err.message));
  let written: Promise<void> = Promise.resolve();
  return {
    fd: stream.fd,
    size: 0,
    send(text) {
      written = new Promise((resolve) => stream.write(`${text}\n`, () => resolve()));
    },
    end: () => written,
  };
}

export function openLineLog(dir: string, file: string, rotation: Rotation = NO_ROTATION, window: FlushWindow = FLUSH_WINDOW): LineLog {
  const onStandardStream = dir === STANDARD_STREAMS;
  const path = onStandardStream ? (file === 'access.log' ? 'stdout' : 'stderr') : join(dir, file);
  // A stream is never rotated, reopened or deleted: the collector reading it does those jobs.
  if (onStandardStream) rotation = NO_ROTATION;
  const say = (message: string): void => void process.stderr.write(`extqs (pid ${process.pid}): ${message}\n`);
  const report = (message: string) => say(`${path}: ${message}`);
  let sink = onStandardStream ? standardStreamSink(file, report) : openSink(path, report);
  let current = rotation;
  /** Files replaced by reopen() that are still writing their last lines. */
  const closing = new Set<Promise<void>>();
  let pending: string[] = [];
  let flushTimer: NodeJS.Timeout | undefined;
  let draining: Promise<void> | undefined;
  /** Set while the file is known to be deleted: its message is said once, not once a check. */
  let lost: 'deleted' | 'unwritable' | undefined;

  function flush(): void {
    clearTimeout(flushTimer);
    if (pending.length === 0) return;
    const lines = pending;
    pending = [];
    sink.send(lines.join('\n'));
    if (current.maxSize > 0 && sink.size >= current.maxSize) rotate();
  }

  function rotate(): void {
    try {
      // The file being renamed may still be taking this sink's last lines: they follow it to `.1`.
      shiftRotated(path, current.maxFiles);
    } catch (err) {
      if (lost !== 'unwritable') say(`cannot rotate ${path} (${(err as Error).message}); it keeps growing until it can be`);
      lost = 'unwritable';
      return;
    }
    reopen();
  }

  function reopen(rotation: Rotation = current): boolean {
    if (onStandardStream) return true;
    if (draining) return false;
    let next: Sink;
    try {
      next = openSink(path, report);
    } catch (err) {
      if (lost !== 'unwritable')
        say(
          `cannot open ${path} (${(err as Error).message}); its lines are dropped until it can be opened (retried every ${DELETED_CHECK_MS / 1000} s and on SIGHUP)`,
        );
      lost = 'unwritable';
      return false;
    }
    const lines = pending;
    pending = [];
    if (lines.length > 0) sink.send(lines.join('\n'));
    const old = sink;
    sink = next;
    current = rotation;
    const ending = old.end().catch((err: Error) => say(`${path}: closing the previous file failed: ${err.message}`));
    closing.add(ending);
    void ending.then(() => closing.delete(ending));
    if (lost) say(`${path} is written again`);
    lost = undefined;
    return true;
  }

  // The directory removed under the process (rm -r logs/): the open file still takes lines, but they go
  // to a file with no name. A renamed file (logrotate) keeps its link; only a deletion drops it to 0.
  const deletedCheck = setInterval(() => {
    fstat(sink.fd, (err, stats) => {
      if (err || draining || onStandardStream || stats.nlink > 0) return;
      if (!lost) say(`${path} was deleted (log directory removed?); creating it again`);
      lost ??= 'deleted';
      reopen();
    });
  }, DELETED_CHECK_MS);
  deletedCheck.unref();

  return {
    write(line) {
      // After drain() the file is closing: a late line goes to stderr rather than nowhere.
      if (draining) {
        process.stderr.write(`${file}: ${line}\n`);
        return;
      }
      pending.push(line);
      if (pending.length >= window.lines) flush();
      else if (pending.length === 1) flushTimer = setTimeout(flush, window.ms);
    },
    reopen,
    drain() {
      draining ??= (async () => {
        clearInterval(deletedCheck);
        flush();
        await Promise.all([sink.end(), ...closing]);
      })();
      return draining;
    },
  };
}
