// PHP's max_execution_time for controllers. A controller still running at the limit is an overrun:
// - awaiting something (the event loop is free): a check every 100 ms catches it; the request is
//   dropped and its abort signal fired, and the worker asks to be replaced;
// - stuck in a synchronous loop (the event loop is blocked): no code of this thread can run, so a
//   watchdog thread reads the in-flight table from shared memory, logs the controller and the limit,
//   and kills this worker; the pool starts a new one.
// The same thread writes the slowlog (--slowlog-timeout, slowlog.ts): it reads the calls' start times from
// the shared table, and takes the worker's stack with the inspector when the thread is blocked.
// In both cases the proxy, whose own timer has the same limit and started first, has answered 504
// already: the drop waits DROP_GRACE_MS more, so a proxy slowed by load still answers 504, not the 500
// that a connection dropped before its timer fired would mean.
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { runsFromSource, siblingFile } from '../../common/entryFile.ts';
import { BLOCKED_AFTER_MS } from '../wire/poolMessages.ts';
import type { SlowCall } from './slowlog.ts';

/** The watchdog thread's module. Run from the sources (under tsx), a thread does not inherit tsx's
 *  hooks: it registers them, then loads its TypeScript. */
const WATCHDOG_FILE = siblingFile(import.meta.url, 'watchdogThread');
const WATCHDOG_BOOT = runsFromSource(import.meta.url)
  ? `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(pathToFileURL(WATCHDOG_FILE).href)}); })`
  : undefined;

const SLOTS = 1024;
const LABEL_BYTES = 512;
const CHECK_EVERY_MS = 100;
export const DROP_GRACE_MS = 500;
/** How long the event loop must be blocked, past the limit, before the watchdog kills the worker. */
const BLOCKED_GRACE_MS = 1000;

export interface Tracked {
  name: string;
  file: string;
  requestId: string;
  /** The controller's version and its bundle's source map: the watchdog maps the slowlog's frames with it. */
  version: string;
  sourceMap: string;
  what: string;
  startedAt: number;
  /**
   * True while the controller reads a request body that is still arriving: an upload's time is not the
   * script's (PHP reads the body before the script starts), so the clock waits, and starts again once it is in.
   */
  receiving?: () => boolean;
  /** Ends the request (drop + abort); called once, at the limit. */
  onOverrun: () => void;
}

/** What the watchdog thread is started with. */
export interface WatchdogData {
  buffer: SharedArrayBuffer;
  /** max_execution_time; 0 = none. */
  limitMs: number;
  graceMs: number;
  /** --slowlog-timeout; 0 = off. */
  slowlogMs: number;
  blockedAfterMs: number;
  logFd: number;
}

/** A source map for the watchdog (slowlog.ts SourceMaps), sent once per controller version. */
export interface WatchdogMap {
  file: string;
  version: string;
  map: string;
}

export interface SharedTable {
  heartbeat: Float64Array;
  startedAt: Float64Array;
  labelLengths: Int32Array;
  labels: Uint8Array;
}

function createSharedTable(): { buffer: SharedArrayBuffer; table: SharedTable } {
  const buffer = new SharedArrayBuffer(8 + SLOTS * 8 + SLOTS * 4 + SLOTS * LABEL_BYTES);
  return { buffer, table: viewSharedTable(buffer) };
}

export function viewSharedTable(buffer: SharedArrayBuffer): SharedTable {
  return {
    heartbeat: new Float64Array(buffer, 0, 1),
    startedAt: new Float64Array(buffer, 8, SLOTS),
    labelLengths: new Int32Array(buffer, 8 + SLOTS * 8, SLOTS),
    labels: new Uint8Array(buffer, 8 + SLOTS * 12, SLOTS * LABEL_BYTES),
  };
}

/** The call in `slot`, as track() wrote it. */
export function readCall(table: SharedTable, slot: number): SlowCall {
  const start = slot * LABEL_BYTES;
  const [name, file, requestId, version, ...what] = new TextDecoder()
    .decode(table.labels.subarray(start, start + table.labelLengths[slot]))
    .split('\t');
  return { name, file, requestId, version, what: what.join('\t') };
}

export interface ExecutionLimitEvents {
  /** A call ran past the limit while the event loop was free (it is dropped right after). */
  overrun(tracked: Tracked): void;
  /** The watchdog thread failed: synchronous overruns go unchecked from now on. */
  watchdogFailed(err: Error): void;
  /** More calls in flight than the table holds: the extra ones run unlimited (said once). */
  tableFull(slots: number): void;
}

export class ExecutionLimit {
  private readonly table: SharedTable;
  private readonly free: number[] = [];
  private readonly running = new Map<number, Tracked>();
  private readonly slots = new Map<Tracked, number>();
  private warnedFull = false;
  /** The versions of each file whose source map the watchdog has (the same strings each call: no key to build). */
  private readonly mapsSent = new Map<string, Set<string>>();
  private readonly encoder = new TextEncoder();
  private readonly timer: NodeJS.Timeout;
  private readonly watchdogData: WatchdogData;
  /** Started by the first call tracked: a worker that never runs a controller has nothing that could block,
   *  and a thread costs 10 MB. It boots on its own thread, so a first call that blocks at once is caught too. */
  private watchdog?: Worker;

  constructor(
    /** max_execution_time; 0 when only the slowlog is on. */
    readonly limitMs: number,
    slowlogMs: number,
    /** Where the watchdog writes its last host.log event (the worker's own log cannot run then). */
    watchdogLogFd: number,
    private readonly events: ExecutionLimitEvents,
  ) {
    const { buffer, table } = createSharedTable();
    this.table = table;
    for (let slot = SLOTS - 1; slot >= 0; slot--) this.free.push(slot);
    this.table.heartbeat[0] = Date.now();
    this.timer = setInterval(() => this.check(), CHECK_EVERY_MS).unref();
    this.watchdogData = { buffer, limitMs, graceMs: BLOCKED_GRACE_MS, slowlogMs, blockedAfterMs: BLOCKED_AFTER_MS, logFd: watchdogLogFd };
  }

  /** Starts the watchdog now, not at the first call: a spare that takes a place serves its first call at once. */
  warm(): void {
    if (!this.watchdog) this.startWatchdog();
  }

  private startWatchdog(): void {
    const workerData = this.watchdogData;
    this.watchdog = WATCHDOG_BOOT ? new Worker(WATCHDOG_BOOT, { eval: true, workerData }) : new Worker(WATCHDOG_FILE, { workerData });
    // Without the watchdog only synchronous overruns go unchecked: log it, keep serving.
    this.watchdog.on('error', (err) => this.events.watchdogFailed(err));
    this.watchdog.unref();
  }

  /**
   * Starts the clock for one controller call. Release it with the same object: a slot freed by an
   * overrun may already serve another call when the late one settles, and must not be freed twice.
   * A full table (SLOTS calls in flight in one worker) leaves the call unlimited, and says so once.
   */
  track(tracked: Tracked): void {
    if (!this.watchdog) this.startWatchdog();
    let versionsSent = this.mapsSent.get(tracked.file);
    if (!versionsSent) this.mapsSent.set(tracked.file, (versionsSent = new Set()));
    if (!versionsSent.has(tracked.version)) {
      versionsSent.add(tracked.version);
      this.watchdog!.postMessage({ file: tracked.file, version: tracked.version, map: tracked.sourceMap } satisfies WatchdogMap);
    }
    const slot = this.free.pop();
    if (slot === undefined) {
      if (!this.warnedFull) this.events.tableFull(SLOTS);
      this.warnedFull = true;
      return;
    }
    // The URL last: a long one is what gets cut at LABEL_BYTES.
    const label = `${tracked.name}\t${tracked.file}\t${tracked.requestId}\t${tracked.version}\t${tracked.what}`;
    const { written } = this.encoder.encodeInto(label, this.table.labels.subarray(slot * LABEL_BYTES, (slot + 1) * LABEL_BYTES));
    this.table.labelLengths[slot] = written;
    this.table.startedAt[slot] = tracked.startedAt;
    this.running.set(slot, tracked);
    this.slots.set(tracked, slot);
  }

  /** Starts the call's clock again from now (its body has just arrived). */
  restart(tracked: Tracked): void {
    tracked.startedAt = Date.now();
    const slot = this.slots.get(tracked);
    if (slot !== undefined) this.table.startedAt[slot] = tracked.startedAt;
  }

  release(tracked: Tracked): void {
    const slot = this.slots.get(tracked);
    if (slot === undefined) return;
    this.slots.delete(tracked);
    this.running.delete(slot);
    this.table.startedAt[slot] = 0;
    this.free.push(slot);
  }

  private check(): void {
    const now = Date.now();
    this.table.heartbeat[0] = now;
    if (this.limitMs === 0) return;
    for (const tracked of this.running.values()) {
      if (tracked.receiving?.()) continue;
      if (now - tracked.startedAt >= this.limitMs + DROP_GRACE_MS) {
        this.release(tracked);
        this.events.overrun(tracked);
        tracked.onOverrun();
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.watchdog?.terminate();
  }
}
