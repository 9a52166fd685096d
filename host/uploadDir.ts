// Where a request's uploads live: one directory each under the system temp directory (TMPDIR), named for
// the worker's pid, so the pool can remove what a worker killed mid-request left behind.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const prefixOf = (pid: number) => `extqs-upload-${pid}-`;

/** A fresh directory for one request's uploads. */
export function makeUploadDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), prefixOf(process.pid)));
}

/** Removes every upload directory worker `pid` left (it died before its requests ended). */
export async function removeUploadsOf(pid: number): Promise<void> {
  const root = tmpdir();
  const left = (await readdir(root)).filter((name) => name.startsWith(prefixOf(pid)));
  await Promise.all(left.map((name) => rm(join(root, name), { recursive: true, force: true })));
}
