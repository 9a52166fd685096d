// Keeps the registry in line with www/controllers. chokidar watches the tree (not single files, so
// editors that save by rename are seen too): every event for a top-level `<Name>.ts|.js` refreshes that
// name, and one for any other module (a helper in lib/, at any depth) the controllers that import it.
// chokidar drops a 'change' that follows another within 50 ms and sends no trailing one, so a second
// save 20 ms after the first would go unseen: each event refreshes at once (fast reloads) and again
// after a quiet window longer than that throttle. The registry compares content hashes, so the
// second refresh costs a file read when nothing changed.
import { basename, dirname, extname } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { ControllerRegistry } from '../controller/registry.ts';
import { CONTROLLER_NAME } from '../../common/controllerName.ts';

/** Longer than chokidar's 50 ms 'change' throttle (chokidar/index.js `_throttle(EV.CHANGE, path, 50)`). */
const TRAILING_REFRESH_MS = 75;

/** What esbuild bundles when a controller imports it. */
const MODULE_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.tsx', '.js', '.mjs', '.cjs', '.jsx', '.json']);

/** The controller a file directly in the controllers directory defines, if any. */
export function controllerNameOf(file: string): string | undefined {
  const ext = extname(file);
  if (ext !== '.ts' && ext !== '.js') return undefined;
  const name = basename(file, ext);
  return CONTROLLER_NAME.test(name) ? name : undefined;
}

export interface ControllerWatcher {
  close(): Promise<void>;
}

/** `changed`: `file` changed, a controller's (its name) or a local module (undefined); told once an event, before the refresh. */
export async function watchControllers(
  registry: ControllerRegistry,
  onError: (err: unknown) => void,
  changed: (name: string | undefined, file: string) => void = () => {},
): Promise<ControllerWatcher> {
  const trailing = new Map<string, NodeJS.Timeout>();
  // Packages come from node_modules, never bundled: a tree of them would only cost watches.
  const watcher: FSWatcher = watch(registry.dir, { ignoreInitial: true, ignored: (path) => basename(path) === 'node_modules' });

  function onFileEvent(file: string): void {
    const name = dirname(file) === registry.dir ? controllerNameOf(file) : undefined;
    if (!name && !MODULE_EXTENSIONS.has(extname(file))) return;
    const refresh = name ? () => registry.refresh(name) : () => registry.refreshDependents(file);
    const key = name ?? `module:${file}`;
    changed(name, file);
    void refresh();
    clearTimeout(trailing.get(key));
    trailing.set(
      key,
      setTimeout(() => {
        trailing.delete(key);
        void refresh();
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
