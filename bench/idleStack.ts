// `extqs start --workers 2` at rest: time to its ready line, then the RSS and PSS of each of its
// processes after IDLE_MS idle. Used by `npm run bench:startup` and by `npm run bench`.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { makeSandbox } from '../tools/sandbox.ts';
import { descendants, privateMb, pssMb, roleOf, rssMb } from './processes.ts';

const IDLE_MS = 5_000;

export interface ProcessMemory {
  role: string;
  rssMb: number;
  pssMb: number;
  privateMb: number;
}

export interface IdleStack {
  readyMs: number;
  /** IDLE_MS after the ready line. */
  processes: ProcessMemory[];
  /** `restMs` after the ready line, when asked: V8's memory reducer gives back what start-up left 8-20 s after it. */
  atRest?: ProcessMemory[];
}

/** RSS, PSS and private memory of `pid` and every process under it, each named by `roleOf`. */
export function memoryOfTree(pid: number, roleOf: (pid: number) => string): ProcessMemory[] {
  return [pid, ...descendants(pid)].map((p) => ({ role: roleOf(p), rssMb: rssMb(p), pssMb: pssMb(p), privateMb: privateMb(p) }));
}

/** Starts the stack of the checkout at `root` (with `extraArgs`), measures it idle (and at rest), and stops it. */
export async function measureIdleStack(root: string, workers = 2, extraArgs: string[] = [], restMs?: number): Promise<IdleStack> {
  const tree = makeSandbox();
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      join(root, 'bin/extqs.js'),
      'start',
      '--port',
      '0',
      '--listen',
      '127.0.0.1',
      '--workers',
      String(workers),
      '--www',
      tree.www,
      '--logs',
      tree.logs,
      ...extraArgs,
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    await new Promise<void>((resolve) =>
      createInterface({ input: child.stdout }).on('line', (line) => line.startsWith('listening on ') && resolve()),
    );
    const readyMs = performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const processes = memoryOfTree(child.pid!, roleOf);
    if (restMs === undefined) return { readyMs, processes };
    await new Promise((resolve) => setTimeout(resolve, restMs - IDLE_MS));
    return { readyMs, processes, atRest: memoryOfTree(child.pid!, roleOf) };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    tree.remove();
  }
}

export type Measure = 'rssMb' | 'pssMb' | 'privateMb';

/** Sum of a measure over the processes with `role` (all of them without it). */
export function totalMb(processes: readonly ProcessMemory[], measure: Measure, role?: string): number {
  return processes.filter((p) => role === undefined || p.role === role).reduce((sum, p) => sum + p[measure], 0);
}
