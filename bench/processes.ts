// The bench's own processes: the built `extqs` command in a scratch tree, ready when it prints its ready
// line. (The test suites have richer helpers; the bench does not depend on them.)
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseReadyUrls } from '../common/ready.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Running {
  child: ChildProcess;
  url: string;
  /** The HTTPS listener's, when the ready line names one. */
  tlsUrl?: string;
  stop(): Promise<void>;
}

/** `extqs <command> <args>` from build/, resolved at its ready line. */
export function startCommand(command: 'proxy' | 'host', args: string[]): Promise<Running> {
  return startNode([join(ROOT, 'bin/extqs.js'), command, ...args], `extqs ${command}`);
}

/** `node <args>`, resolved at its ready line. */
export function startNode(args: string[], what: string): Promise<Running> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const urls = parseReadyUrls(line);
      if (urls === undefined) return;
      resolve({
        child,
        url: urls[0],
        tlsUrl: urls[1],
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          await exited;
        },
      });
    });
    void exited.then(([code, signal]) => reject(new Error(`${what} exited with ${code ?? signal} before its ready line`)));
  });
}

/** bench/nodeFloor.ts in front of the host at `socket`: the Node floor, or, given a logs directory (made here), the logging floor. */
export function startNodeFloor(socket: string, publicDir: string, logs?: string): Promise<Running> {
  if (logs) mkdirSync(logs, { recursive: true });
  const args = ['--import', 'tsx', join(ROOT, 'bench', 'nodeFloor.ts'), socket, publicDir, ...(logs ? [logs] : [])];
  return startNode(args, logs ? 'nodeFloor.ts (logging)' : 'nodeFloor.ts');
}

/** Every process under `pid`, from /proc (Linux). */
export function descendants(pid: number): number[] {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8');
  } catch {
    return []; // it exited while the tree was walked (a host worker's esbuild, a worker replaced)
  }
  const children = text.trim().split(/\s+/).filter(Boolean).map(Number);
  return children.flatMap((child) => [child, ...descendants(child)]);
}

export function rssMb(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/**
 * PSS: RSS with each shared page divided among the processes that map it. Five Node processes each count
 * the same ~25 MB of node's own code in their RSS; PSS counts it once across them, so the sum of PSS is
 * what the stack takes from the machine.
 */
export function pssMb(pid: number): number {
  const kb = /^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/**
 * Private memory (USS): the pages only this process maps, what stopping it would give back. Unlike PSS it
 * does not depend on how many other Node processes run on the machine and share node's code with it.
 */
export function privateMb(pid: number): number {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(rollup)?.[1] ?? 0);
  return (kb('Private_Clean') + kb('Private_Dirty')) / 1024;
}

/**
 * What an `extqs start` process is: launcher, proxy (alone, or the primary of proxy workers), proxy worker,
 * host (the pool's primary), host worker or a worker's esbuild.
 */
export function roleOf(pid: number): string {
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  if (/proxy\/workerMain/.test(cmdline)) return 'proxy worker';
  if (/host\/worker\/workerMain/.test(cmdline)) return 'host worker';
  if (/ host\b|host\/main/.test(cmdline)) return 'host';
  if (/ proxy\b|proxy\/main/.test(cmdline)) return 'proxy';
  if (/esbuild/.test(cmdline)) return 'esbuild';
  return 'launcher';
}
