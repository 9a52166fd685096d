// The watchdog thread of a host worker (see executionLimit.ts). It runs while the worker's own thread
// is blocked in a controller's synchronous loop, which no timer of that thread can interrupt.
import { appendFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { hostJson, hostLine } from '../common/logFormat.ts';
import { readLabel, viewSharedTable } from './executionLimit.ts';

const { buffer, limitMs, graceMs, hostLogFile } = workerData as { buffer: SharedArrayBuffer; limitMs: number; graceMs: number; hostLogFile: string; json: boolean };
const table = viewSharedTable(buffer);
let { json } = workerData as { json: boolean };
// A SIGHUP may change host.log's layout; this thread's loop is free to hear it while the worker's is not.
parentPort?.on('message', (message: { json: boolean }) => (json = message.json));

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
    // The worker's own log stream cannot run; this line goes straight to the file (by name, so into the
    // current one after a rotation).
    const entry = {
      time: new Date(),
      level: 'error' as const,
      requestId,
      message: `Maximum execution time of ${limitMs / 1000} seconds exceeded in controller ${name} (${file}) in ${what}: the worker was blocked for ${(blockedMs / 1000).toFixed(1)} s and is killed (pid ${process.pid})`,
    };
    appendFileSync(hostLogFile, `${json ? hostJson(entry, process.pid) : hostLine(entry)}\n`);
  }
  process.kill(process.pid, 'SIGKILL');
}, 100);
