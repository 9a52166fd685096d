// What every bench entry measures with: medians, a free loopback port, a process's CPU time, a plain GET.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { descendants } from './processes.ts';

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export { freePort } from '../tools/ports.ts';

const CLOCK_TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system, all threads) of one process, in clock ticks; 0 once it is gone. */
function ticksOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime, stime
  } catch {
    return 0;
  }
}

/**
 * CPU time (user + system, all threads) of a process and its direct children, from /proc, in µs: the
 * front's cost per request is far steadier across runs than req/s on a shared 2-core machine.
 */
export function cpuMicros(pid: number): number {
  let children: number[];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    children = [];
  }
  return ((ticksOf(pid) + children.reduce((sum, child) => sum + ticksOf(child), 0)) * 1e6) / CLOCK_TICKS_PER_SECOND;
}

/** The same over every process under `pid`, however deep (a launcher's proxy workers are its grandchildren). */
export function treeCpuMicros(pid: number): number {
  return ([pid, ...descendants(pid)].reduce((sum, p) => sum + ticksOf(p), 0) * 1e6) / CLOCK_TICKS_PER_SECOND;
}

export function getBody(url: string, socketPath?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = request(
      { host: target.hostname, port: target.port, path: target.pathname + target.search, socketPath, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}
