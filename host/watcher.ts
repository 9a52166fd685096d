// Keeps the registry in line with www/controllers. chokidar watches the directory (not single files,
// so editors that save by rename are seen too) and every event for `<Name>.ts|.js` refreshes that name.
// chokidar drops a 'change' that follows another within 50 ms and sends no trailing one, so a second
// save 20 ms after the first would go unseen: each event refreshes at once (fast reloads) and again
// after a quiet window longer than that throttle. The registry compares content hashes, so the
// second refresh costs a file read when nothing changed.
import { basename, extname } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { ControllerRegistry } from './registry.ts';
import { CONTROLLER_NAME } from './route.ts';

/** Longer than chokidar's 50 ms 'change' throttle (chokidar/index.js `_throttle(EV.CHANGE, path, 50)`). */
const TRAILING_REFRESH_MS = 75;

/** The controller a file in the controllers directory defines, if any. */
export function controllerNameOf(file: string): string | undefined {
  const ext = extname(file);
  if (ext !== '.ts' && ext !== '.js') return undefined;
  const name = basename(file, ext);
  return CONTROLLER_NAME.test(name) ? name : undefined;
}

export interface ControllerWatcher {
  close(): Promise<void>;
}

export async function watchControllers(registry: ControllerRegistry, onError: (err: unknown) => void): Promise<ControllerWatcher> {
  const trailing = new Map<string, NodeJS.Timeout>();
  const watcher: FSWatcher = watch(registry.dir, { ignoreInitial: true, depth: 0 });

  function onFileEvent(file: string): void {
    const name = controllerNameOf(file);
    if (!name) return;
    void registry.refresh(name);
    clearTimeout(trailing.get(name));
    trailing.set(
      name,
      setTimeout(() => {
        trailing.delete(name);
        void registry.refresh(name);
      }, TRAILING_REFRESH_MS),
    );
  }

  watcher.on('add', onFileEvent).on('change', onFileEvent).on('unlink', onFileEvent).on('error', onError);
  await new Promise<void>((resolve) => watcher.once('ready', resolve));
  return {
    async close() {
      for (const timer of trailing.values()) clearTimeout(timer);
      trailing.clear();
      await watcher.close();
    },
  };
}
