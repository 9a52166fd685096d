// The launcher's pid file (nginx's `pid`): written once the service answers, removed when it exits.
// As nginx does, an existing file is overwritten, even one naming a live process: a file left by a
// killed launcher must not block a restart, and a second launcher on the same port fails on the port.
import { readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';

/** Writes this process's pid to `path` and removes the file at exit; returns the removal, for an orderly stop. */
export function writePidFile(path: string): () => void {
  // Written beside it and renamed: logrotate's `cat` sees the old file or the whole new one.
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${process.pid}\n`);
  renameSync(temp, path);
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    try {
      // A later launcher may have written its own pid there since: that file is not ours to remove.
      if (readFileSync(path, 'utf8').trim() === String(process.pid)) unlinkSync(path);
    } catch {
      // Already gone: nothing to remove.
    }
  };
  process.once('exit', remove);
  return remove;
}
