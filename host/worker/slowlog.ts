// php-fpm's slowlog (request_slowlog_timeout), adapted: a controller call still running after
// --slowlog-timeout seconds, or one that --max-execution-time ends, gets an entry in host.log: a header
// naming the call, then its JavaScript stack, one `function file:line` a line, in the controller's own
// source. The watchdog thread takes the stack (mainThreadStack.ts) and writes the entry; docs/design.md §8.
import { fileURLToPath } from 'node:url';
import { stackMapper } from '../controller/stackMap.ts';

/** A call as the watchdog reads it from the shared table. */
export interface SlowCall {
  name: string;
  file: string;
  requestId: string;
  version: string;
  what: string;
}

/** One frame of a paused thread, as the inspector gives it: 0-based line and column. */
export interface PausedFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/** Why an entry is written. */
export type SlowCause = { slow: number } | { killed: number } | { dropped: number };

/** What was on the stack: the formatted frames (formatFrames), or why there are none. */
export type StackReport = string[] | 'awaiting' | 'not-paused';

/** A thread paused past this many frames shows the first ones: what runs is at the top. */
const MAX_FRAMES = 50;
/** Source maps the watchdog keeps (one per controller version it was sent); old versions go first. */
const MAX_MAPS = 64;

/** The source maps of the controller versions that ran on this worker, for the watchdog thread. */
export class SourceMaps {
  private readonly mappers = new Map<string, (stack: string) => string>();

  add(file: string, version: string, map: string): void {
    const key = `${file}\t${version}`;
    this.mappers.delete(key);
    this.mappers.set(key, stackMapper(file, map));
    if (this.mappers.size > MAX_MAPS) this.mappers.delete(this.mappers.keys().next().value!);
  }

  mapperOf(file: string, version: string): ((stack: string) => string) | undefined {
    return this.mappers.get(`${file}\t${version}`);
  }
}

function pathOf(url: string): string {
  if (url.startsWith('file://')) return fileURLToPath(url);
  return url || '<anonymous>';
}

/**
 * The frames as `function file:line`, each position of the call's bundle mapped to the controller's
 * source or helper. The frames below the call's outermost one are the host's own plumbing and are left out.
 */
export function formatFrames(frames: readonly PausedFrame[], call: SlowCall, maps: SourceMaps): string[] {
  const mapStack = maps.mapperOf(call.file, call.version);
  const lines = frames.map((frame) => {
    const path = pathOf(frame.url);
    const at = `${path}:${frame.lineNumber + 1}:${frame.columnNumber + 1}`;
    const mapped = path === call.file && mapStack ? mapStack(at) : at;
    return { own: path === call.file, text: `${frame.functionName || '(anonymous)'} ${mapped.replace(/:\d+$/, '')}` };
  });
  const outermost = lines.findLastIndex((line) => line.own);
  return lines
    .slice(0, outermost >= 0 ? outermost + 1 : MAX_FRAMES)
    .slice(0, MAX_FRAMES)
    .map((line) => line.text);
}

function causeText(cause: SlowCause): string {
  if ('slow' in cause) return `has run ${(cause.slow / 1000).toFixed(1)} s`;
  if ('killed' in cause) return `was killed with its worker after ${(cause.killed / 1000).toFixed(1)} s (max_execution_time)`;
  return `was dropped after ${(cause.dropped / 1000).toFixed(1)} s (max_execution_time)`;
}

/** The host.log message: the header line, then one line a frame (host.log indents them). */
export function slowlogMessage(call: Omit<SlowCall, 'version'>, cause: SlowCause, pid: number, stack: StackReport): string {
  const header = `Slow controller call: ${call.name} (${call.file}) in ${call.what} ${causeText(cause)}, worker ${pid}; stack:`;
  if (stack === 'awaiting') return `${header}\n(awaiting: no JavaScript of the call is running, it waits for I/O, a timer or a promise)`;
  if (stack === 'not-paused') return `${header}\n(the thread did not reach JavaScript to pause: blocked in native code)`;
  return [header, ...stack].join('\n');
}
