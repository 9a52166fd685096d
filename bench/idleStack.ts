// `extqs start --workers 2` at rest: time to its ready line, then the RSS and PSS of each of its
// processes after IDLE_MS idle. Used by `npm run bench:startup` and by `npm run bench`.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { makeSandbox } from '../tools/sandbox.ts';
import { descendants, pssMb, roleOf, rssMb } from './processes.ts';

const IDLE_MS = 5_000;

export interface ProcessMemory {
  role: string;
  rssMb: number;
  pssMb: number;
}

export interface IdleStack {
  readyMs: number;
  processes: ProcessMemory[];
}

/** RSS and PSS of `pid` and every process under it, each named by `roleOf`. */
export function memoryOfTree(pid: number, roleOf: (pid: number) => string): ProcessMemory[] {
  return [pid, ...descendants(pid)].map((p) => ({ role: roleOf(p), rssMb: rssMb(p), pssMb: pssMb(p) }));
}

/** Starts the stack of the checkout at `root` (with `extraArgs`), measures it at rest, and stops it. */
export async function measureIdleStack(root: string, workers = 2, extraArgs: string[] = []): Promise<IdleStack> {
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
    return { readyMs, processes: memoryOfTree(child.pid!, roleOf) };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    tree.remove();
  }
}

/** Sum of a measure over the processes with `role` (all of them without it). */
export function totalMb(processes: readonly ProcessMemory[], measure: 'rssMb' | 'pssMb', role?: string): number {
  return processes.filter((p) => role === undefined || p.role === role).reduce((sum, p) => sum + p[measure], 0);
}
