// extqs's directories under the system temp directory (TMPDIR), each named for the process that made it: the
// launcher's (`extqs-run-<pid>-…`, the host's socket), the host primary's worker sockets (`extqs-host-<pid>-…`) and one
// request's uploads (`extqs-upload-<pid>-…`). A process killed outright (SIGKILL, the OOM killer) cannot remove its
// own: the pool removes a dead worker's uploads when it exits, and a host that starts removes what processes that are
// gone left, as php-fpm replaces a stale socket file.
// A pid is judged in this process's namespace: hosts in containers sharing one TMPDIR volume need one each.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type TempDirKind = 'run' | 'host' | 'upload';

const prefixOf = (kind: TempDirKind, pid: number) => `extqs-${kind}-${pid}-`;

/** `extqs-host-1234-AbC123` → 1234, or undefined for a name that is not one of these directories. */
function ownerOf(name: string): number | undefined {
  const match = /^extqs-(?:run|host|upload)-(\d+)-[^-]+$/.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** Whether `pid` names a running process: one of another user's counts (EPERM), only "no such process" does not. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** A fresh directory of `kind`, only this user can enter (mkdtemp makes it 0700), named for this process. */
export function makeTempDir(kind: TempDirKind): Promise<string> {
  return mkdtemp(join(tmpdir(), prefixOf(kind, process.pid)));
}

/** Removes every directory of `kind` that process `pid` made (it died before it could). */
export async function removeTempDirsOf(kind: TempDirKind, pid: number): Promise<void> {
  const root = tmpdir();
  const left = (await readdir(root)).filter((name) => name.startsWith(prefixOf(kind, pid)));
  await Promise.all(left.map((name) => rm(join(root, name), { recursive: true, force: true })));
}

/**
 * Removes the directories of processes that are gone, and returns their names. A pid taken again by another
 * process keeps its directory until that one is gone too; another user's directory is left where it is (a
 * sticky /tmp refuses it), as is anything that cannot be removed.
 */
export async function removeStaleTempDirs(): Promise<string[]> {
  const root = tmpdir();
  const stale = (await readdir(root)).filter((name) => {
    const pid = ownerOf(name);
    return pid !== undefined && pid !== process.pid && !processAlive(pid);
  });
  const removed = await Promise.all(
    stale.map((name) =>
      rm(join(root, name), { recursive: true }).then(
        () => name,
        () => undefined,
      ),
    ),
  );
  return removed.filter((name) => name !== undefined);
}
