// The watchdog thread of a host worker (see executionLimit.ts). It runs while the worker's own thread
// is blocked in a controller's synchronous loop, which no timer of that thread can interrupt: it kills a
// worker blocked past max_execution_time, and writes the slowlog (slowlog.ts), both with the stack the
// blocked thread is in (mainThreadStack.ts).
import { writeSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { readCall, viewSharedTable, type WatchdogData, type WatchdogMap } from './executionLimit.ts';
import { mainThreadStack } from './mainThreadStack.ts';
import { sayDeath } from './selfKill.ts';
import type { WatchdogLine, WireHostEntry } from '../wire/poolMessages.ts';
import { formatFrames, slowlogMessage, SourceMaps, type SlowCall, type SlowCause, type StackReport } from './slowlog.ts';

const { buffer, limitMs, graceMs, slowlogMs, blockedAfterMs, logFd } = workerData as WatchdogData;
const table = viewSharedTable(buffer);
const maps = new SourceMaps();
parentPort!.on('message', ({ file, version, map }: WatchdogMap) => maps.add(file, version, map));
/** How long a stack may take: past it the thread is in native code, where Debugger.pause cannot reach. */
const PAUSE_TIMEOUT_MS = 1000;
/** The start time of each slot's call already in the slowlog: one entry a call. */
const slowlogged = new Map<number, number>();
let busy = false;

function write(entry: Omit<WireHostEntry, 'time' | 'pid'>): void {
  // The worker's IPC channel cannot run while its thread is blocked; this pipe reaches the primary,
  // host.log's one writer, and what is in it survives a kill.
  writeSync(logFd, `${JSON.stringify({ ...entry, time: Date.now(), pid: process.pid } satisfies WireHostEntry)}\n`);
}

/** The stack each call gets: the thread's own when it is blocked (one of the calls is running), else none. */
async function stackOf(blocked: boolean): Promise<(call: SlowCall) => StackReport> {
  if (!blocked) return () => 'awaiting';
  const frames = await mainThreadStack(PAUSE_TIMEOUT_MS).catch(() => undefined);
  return (call) => (frames ? formatFrames(frames, call, maps) : 'not-paused');
}

async function slowlog(slots: number[], now: number, blocked: boolean): Promise<void> {
  const calls = callsIn(slots);
  const stack = await stackOf(blocked);
  for (const { call, startedAt } of calls) {
    write({ level: 'warn', requestId: call.requestId, message: slowlogMessage(call, { slow: now - startedAt }, process.pid, stack(call)) });
  }
}

/** Slots whose call is read from the table with its start time. */
function callsIn(slots: number[]): { call: SlowCall; startedAt: number }[] {
  return slots.map((slot) => ({ call: readCall(table, slot), startedAt: table.startedAt[slot] }));
}

async function kill(slots: number[], now: number, blockedMs: number): Promise<void> {
  const calls = callsIn(slots);
  for (const {
    call: { name, file, requestId, what },
  } of calls) {
    write({
      level: 'error',
      requestId,
      message:
        `Maximum execution time of ${limitMs / 1000} seconds exceeded in controller ${name} (${file}) in ${what}: ` +
        `the worker was blocked for ${(blockedMs / 1000).toFixed(1)} s and is killed (pid ${process.pid})`,
    });
  }
  const stack = await stackOf(true);
  for (const { call, startedAt } of calls) {
    const cause: SlowCause = { killed: now - startedAt };
    write({ level: 'error', requestId: call.requestId, message: slowlogMessage(call, cause, process.pid, stack(call)) });
  }
  // The call that has run longest is the one blocking the thread: the others awaited behind it.
  const [longest] = [...calls].sort((a, b) => a.startedAt - b.startedAt);
  sayDeath(logFd, {
    requestId: longest.call.requestId,
    controller: longest.call.name,
    cause: `the execution-limit kill: controller ${longest.call.name} blocked the worker past max_execution_time (${limitMs / 1000} s)`,
  });
  process.kill(process.pid, 'SIGKILL');
}

/** What the primary was last told: a blocked worker is sent no new request until it turns again. */
let saidBlocked = false;

/**
 * Tells the primary when the worker's loop stops and starts turning while calls run (docs/design.md §6.3), with the
 * request ids of the calls running then: a proxy sends a request it sent that worker, not one of them, elsewhere.
 */
function sayBlocked(blocked: boolean, slots: number[]): void {
  if (blocked === saidBlocked) return;
  saidBlocked = blocked;
  const running = blocked ? callsIn(slots).map(({ call }) => call.requestId) : [];
  writeSync(logFd, `${JSON.stringify({ blocked, running } satisfies WatchdogLine)}\n`);
}

function check(): Promise<void> | undefined {
  const now = Date.now();
  const blockedMs = now - table.heartbeat[0];
  const overruns: number[] = [];
  const slow: number[] = [];
  const running: number[] = [];
  for (let slot = 0; slot < table.startedAt.length; slot++) {
    const startedAt = table.startedAt[slot];
    if (startedAt === 0) continue;
    running.push(slot);
    if (limitMs > 0 && blockedMs >= graceMs && now - startedAt >= limitMs + graceMs) overruns.push(slot);
    if (slowlogMs > 0 && now - startedAt >= slowlogMs && slowlogged.get(slot) !== startedAt) slow.push(slot);
  }
  sayBlocked(running.length > 0 && blockedMs >= blockedAfterMs, running);
  if (overruns.length > 0) return kill(overruns, now, blockedMs);
  if (slow.length === 0) return undefined;
  for (const slot of slow) slowlogged.set(slot, table.startedAt[slot]);
  return slowlog(slow, now, blockedMs >= blockedAfterMs);
}

setInterval(() => {
  if (busy) return;
  const running = check();
  if (!running) return;
  busy = true;
  void running.finally(() => (busy = false));
}, 100);
