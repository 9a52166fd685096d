// A controller's console output goes to host.log (php-fpm's catch_workers_output), not to the launcher's
// stdout: in a host worker the console's methods are replaced by ones that format as Node's console does
// and log one event tagged with the request id and controller of the call that is running
// (controllerCall.ts). Output outside a call (a module body at load time, a timer left running) is
// tagged with the controller whose file is on the stack, else `-`.
//
// A flood (a log line in a hot loop) is bounded by a token bucket per worker: past it a line costs a
// counter increment, and one line later says how many were dropped. Nothing here waits: events leave the
// worker over IPC, a turn's in one message (hostLog.ts). A controller stuck in a synchronous loop sends
// nothing until it yields, and if its watchdog kills the worker (docs/design.md §8) its last lines die
// with it; the bucket bounds what can pile up meanwhile. What a controller writes to process.stdout or
// process.stderr itself is caught the same way: left to the launcher's pipe, a flood filled its memory and
// crashed the worker (ENOBUFS).
import { formatWithOptions, inspect, type InspectOptions } from 'node:util';
import { currentCall } from '../controller/controllerCall.ts';
import type { HostLog } from '../wire/hostLog.ts';

/**
 * Lines a second, and the burst a quiet worker may write at once. 100/s is far above what a request
 * logs on purpose (a few lines), and bounds a runaway loop to about 15 KB/s of host.log per worker; the
 * burst of 200 lets a request print a page of debugging output in one go.
 */
export const CONSOLE_LINES_PER_SECOND = 100;
export const CONSOLE_BURST = 200;

/** A token bucket: `take()` says whether one more line may go now. */
export class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.updatedAt = now();
  }

  take(): boolean {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.updatedAt) * this.perSecond) / 1000);
    this.updatedAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

type Level = 'error' | 'warn' | 'info' | 'debug';

/**
 * The most of one stdout or stderr write that reaches host.log: php-fpm's `log_limit` (1024 bytes a line
 * of a child's output). A write is an event; without a bound one 1 MB write would be a 1 MB line.
 */
export const STREAM_WRITE_MAX_CHARS = 1024;

/** host.log's level for each console method; table, count, timeEnd, group call log, and assert calls warn. */
const LEVELS = { log: 'info', info: 'info', dir: 'info', debug: 'debug', trace: 'debug', warn: 'warn', error: 'error' } as const;

/** The name of the controller whose file is on a stack (its module body, a callback it left), if any. */
export function controllerOnStack(stack: string, controllersDir: string): string | undefined {
  const at = stack.indexOf(`${controllersDir}/`);
  if (at === -1) return undefined;
  return /^([A-Za-z_][A-Za-z0-9_]*)\.(?:ts|js):\d+/.exec(stack.slice(at + controllersDir.length + 1))?.[1];
}

export interface ConsoleCapture {
  /** Writes the count of lines dropped so far, if any (a worker about to exit). */
  flush(): void;
}

/** Replaces the console methods of this process (a host worker) with ones writing to `log`. */
export function captureConsole(
  log: HostLog,
  controllersDir: string,
  bucket = new TokenBucket(CONSOLE_LINES_PER_SECOND, CONSOLE_BURST),
): ConsoleCapture {
  let dropped = 0;
  let report: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(report);
    report = undefined;
    if (dropped === 0) return;
    log.warn(
      `${dropped} console lines dropped: more than ${CONSOLE_LINES_PER_SECOND} a second (burst ${CONSOLE_BURST}) in worker ${process.pid}`,
    );
    dropped = 0;
  };

  function emit(level: Level, text: () => string, self: (...args: never[]) => unknown): void {
    if (!bucket.take()) {
      dropped += 1;
      // Said once the bucket has had a second to refill, at most once a second however long the flood.
      report ??= setTimeout(flush, 1000).unref();
      return;
    }
    const call = currentCall();
    let controller = call?.controller;
    if (controller === undefined) {
      const holder: { stack?: string } = {};
      Error.captureStackTrace(holder, self);
      controller = controllerOnStack(holder.stack ?? '', controllersDir) ?? '-';
    }
    log[level](`[${controller}] ${text()}`, call?.requestId);
  }

  const format = (args: unknown[]) => formatWithOptions({}, ...args);
  const methods: Record<keyof typeof LEVELS, (...args: never[]) => void> = {
    log: function log(...args: unknown[]) {
      emit(LEVELS.log, () => format(args), methods.log);
    },
    info: function info(...args: unknown[]) {
      emit(LEVELS.info, () => format(args), methods.info);
    },
    debug: function debug(...args: unknown[]) {
      emit(LEVELS.debug, () => format(args), methods.debug);
    },
    warn: function warn(...args: unknown[]) {
      emit(LEVELS.warn, () => format(args), methods.warn);
    },
    error: function error(...args: unknown[]) {
      emit(LEVELS.error, () => format(args), methods.error);
    },
    dir: function dir(item: unknown, options?: InspectOptions) {
      emit(LEVELS.dir, () => inspect(item, { customInspect: false, ...options }), methods.dir);
    },
    trace: function trace(...args: unknown[]) {
      // As Node's: `Trace: <message>` and the stack from the caller, here mapped to the controller's source.
      const holder = { name: 'Trace', message: format(args), stack: '' };
      Error.captureStackTrace(holder, methods.trace);
      emit(LEVELS.trace, () => currentCall()?.mapStack(holder.stack) ?? holder.stack, methods.trace);
    },
  };
  Object.assign(console, methods);
  captureStream(process.stdout, 'info', emit);
  captureStream(process.stderr, 'error', emit);
  return { flush };
}

type Emit = (level: Level, text: () => string, self: (...args: never[]) => unknown) => void;

/** The text of one write, without its final newline (host.log ends each event), cut at STREAM_WRITE_MAX_CHARS. */
export function streamWriteText(chunk: string | Uint8Array, encoding: BufferEncoding = 'utf8'): string {
  const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString(encoding);
  const line = text.endsWith('\n') ? text.slice(0, -1) : text;
  if (line.length <= STREAM_WRITE_MAX_CHARS) return line;
  return `${line.slice(0, STREAM_WRITE_MAX_CHARS)}… (${line.length - STREAM_WRITE_MAX_CHARS} more characters dropped)`;
}

/**
 * Replaces `stream.write` with one writing a host.log event through `emit` (the console's bucket). Once the
 * primary is gone (no IPC), writes go where they went: the relay then writes its own lines to stderr.
 */
function captureStream(stream: NodeJS.WriteStream, level: Level, emit: Emit): void {
  const original = stream.write.bind(stream) as (...args: unknown[]) => boolean;
  const write = function write(
    chunk: string | Uint8Array,
    encodingOrDone?: BufferEncoding | ((err?: Error | null) => void),
    done?: (err?: Error | null) => void,
  ): boolean {
    if (!process.connected) return original(chunk, encodingOrDone, done);
    const encoding = typeof encodingOrDone === 'string' ? encodingOrDone : undefined;
    const callback = typeof encodingOrDone === 'function' ? encodingOrDone : done;
    emit(level, () => streamWriteText(chunk, encoding), write);
    // As a stream calls back after its write: never before the caller's next statement.
    if (callback) process.nextTick(callback, null);
    return true;
  };
  stream.write = write;
}
