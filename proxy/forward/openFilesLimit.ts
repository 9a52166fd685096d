// The proxy's bound on open connections is its file descriptors (no pool caps its connections to a host:
// forwardBuiltin.ts). When they run out, the operator is told which limit to raise, as nginx's
// "worker_connections are not enough" names its own.
import { openSync, readSync } from 'node:fs';

/** Errors that mean this process, or the whole system, has no file descriptor left. */
export function isOutOfDescriptors(err: NodeJS.ErrnoException): boolean {
  return err.code === 'EMFILE' || err.code === 'ENFILE';
}

/**
 * /proc/self/limits, opened before it is needed: once the descriptors have run out, no file can be opened to
 * say what the limit is. A procfs file is made anew at each read from its start, so a limit changed since
 * (prlimit) is read as it is now.
 */
let limitsFile: number | undefined | null;

/** Opens what openFilesLimit() reads; called when the process starts forwarding. */
export function watchOpenFilesLimit(): void {
  if (limitsFile !== undefined) return;
  try {
    limitsFile = openSync('/proc/self/limits', 'r');
  } catch {
    limitsFile = null; // not Linux: the line says `unknown`
  }
}

/** This process's soft limit on open files (`unknown` off Linux). */
export function openFilesLimit(): string {
  if (limitsFile === undefined || limitsFile === null) return 'unknown';
  const text = Buffer.alloc(4096);
  const length = readSync(limitsFile, text, 0, text.length, 0);
  return /^Max open files\s+(\S+)/m.exec(text.toString('latin1', 0, length))?.[1] ?? 'unknown';
}

/** The error.log line for a request that found no descriptor for its host connection. */
export function outOfDescriptorsLine(err: NodeJS.ErrnoException, upstream: string, path: string): string {
  const which =
    err.code === 'ENFILE' ? 'the system is out of file descriptors' : `this process is out of file descriptors (limit ${openFilesLimit()})`;
  return `could not connect to upstream ${upstream} for ${path}: ${which}; raise the limit (ulimit -n, or LimitNOFILE= under systemd)`;
}
