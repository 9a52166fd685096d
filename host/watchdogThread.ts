// The watchdog thread of a host worker (see executionLimit.ts). It runs while the worker's own thread
// is blocked in a controller's synchronous loop, which no timer of that thread can interrupt.
import { writeSync } from 'node:fs';
import { workerData } from 'node:worker_threads';
import { readLabel, viewSharedTable, type WatchdogData } from './executionLimit.ts';
import type { WireHostEntry } from './poolMessages.ts';

const { buffer, limitMs, graceMs, logFd } = workerData as WatchdogData;
const table = viewSharedTable(buffer);

setInterval(() => {
  const now = Date.now();
  const blockedMs = now - table.heartbeat[0];
  if (blockedMs < graceMs) return;
  const overruns: number[] = [];
  for (let slot = 0; slot < table.startedAt.length; slot++) {
    const startedAt = table.startedAt[slot];
    if (startedAt > 0 && now - startedAt >= limitMs + graceMs) overruns.push(slot);
  }
  if (overruns.length === 0) return;
  for (const slot of overruns) {
    const [name, file, requestId, what] = readLabel(table, slot).split('\t');
    const entry: WireHostEntry = {
      time: now,
      level: 'error',
      requestId,
      pid: process.pid,
      message:
        `Maximum execution time of ${limitMs / 1000} seconds exceeded in controller ${name} (${file}) in ${what}: ` +
        `the worker was blocked for ${(blockedMs / 1000).toFixed(1)} s and is killed (pid ${process.pid})`,
    };
    // The worker's IPC channel cannot run while its thread is blocked; this pipe reaches the primary,
    // host.log's one writer, and what is in it survives the kill below.
    writeSync(logFd, `${JSON.stringify(entry)}\n`);
  }
  process.kill(process.pid, 'SIGKILL');
}, 100);
