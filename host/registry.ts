// The controllers the host serves, by name. A request for a name not yet loaded reads it from disk
// (so a freshly added file is served on the next request); the watcher calls refresh() on every change
// so a loaded controller follows its file. A failed load never replaces a good version.
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Controller } from '../common/controller.ts';
import { LinkGuard, LinkRefusedError } from '../common/linkGuard.ts';
import type { FollowSymlinks } from '../common/settings.ts';
import { compileController, type CompiledController } from './compile.ts';
import { ControllerLinkRefusedError, ControllerMissingError } from './errors.ts';

export interface LoadedController {
  readonly name: string;
  readonly file: string;
  /** sha256 of the source, first 12 hex digits: which version served a request. */
  readonly version: string;
  readonly handler: Controller;
  /** The stack of an error from this version, with the controller's own source lines. */
  readonly mapStack: (stack: string) => string;
}

interface Entry extends LoadedController {
  readonly dispose: CompiledController['dispose'];
  /** Requests running on this version right now. */
  active: number;
  /** Replaced or removed: disposed once the last request on it ends. */
  retired: boolean;
}

export interface RegistryEvents {
  loaded(controller: LoadedController, reason: 'request' | 'reload'): void;
  removed(name: string, file: string): void;
  /** A reload failed; the previous version (if any) keeps serving. */
  reloadFailed(name: string, err: unknown): void;
  disposeFailed(name: string, err: unknown): void;
}

export class ControllerRegistry {
  private readonly loaded = new Map<string, Entry>();
  /** The version of each name whose last reload failed, so the watcher's repeat check logs it once. */
  private readonly failedVersions = new Map<string, string>();
  /** One load at a time per name, so a request and a reload never race each other. */
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Which symbolic links in the directory may be followed; judged when a file is read, not per request. */
  private readonly links: LinkGuard;

  constructor(
    readonly dir: string,
    private readonly events: RegistryEvents,
    followSymlinks: FollowSymlinks,
  ) {
    this.links = new LinkGuard(dir, followSymlinks);
  }

  /**
   * The controller for `name` (already validated as an identifier) for one request, which must hand it
   * back with release(); throws a load or missing error.
   */
  acquire(name: string): LoadedController | Promise<LoadedController> {
    // The hot path: a loaded controller costs one map lookup.
    const entry = this.loaded.get(name);
    if (entry) {
      entry.active += 1;
      return entry;
    }
    return this.serialize(name, async () => {
      const loaded = await this.loadIfAbsent(name);
      loaded.active += 1;
      return loaded;
    });
  }

  /** The request on `controller` ended; a replaced version is disposed after its last request. */
  release(controller: LoadedController): void {
    const entry = controller as Entry;
    entry.active -= 1;
    if (entry.retired && entry.active === 0) void this.disposeEntry(entry);
  }

  /** Brings `name` in line with its file on disk; logs instead of throwing. */
  refresh(name: string): Promise<void> {
    return this.serialize(name, () => this.sync(name)).catch((err) => this.events.reloadFailed(name, err));
  }

  /** Calls every loaded version's dispose hook (shutdown), after any load still under way. */
  async disposeAll(): Promise<void> {
    await Promise.all(this.queues.values());
    for (const entry of this.loaded.values()) await this.retire(entry);
    this.loaded.clear();
  }

  private serialize<T>(name: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(name) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(name, settled);
    void settled.then(() => {
      if (this.queues.get(name) === settled) this.queues.delete(name);
    });
    return next;
  }

  /**
   * The source of `name` (.ts preferred when both exist), read on the calling thread: a controller is a
   * small file read once per version, and each step of an async read waits for the worker's next
   * event-loop turn, several milliseconds under load, which a reload would wait for too.
   */
  private read(name: string): { file: string; source: string } | undefined {
    for (const file of [join(this.dir, `${name}.ts`), join(this.dir, `${name}.js`)]) {
      // A missing file is the observed deployment's every request: statSync answers ENOENT without an
      // Error, which a failed read builds with its stack. Any other failure (EACCES) still throws.
      const stats = statSync(file, { throwIfNoEntry: false });
      if (!stats) continue;
      const verdict = this.links.checkSync(file);
      if (!verdict.follow) throw new ControllerLinkRefusedError(file, verdict);
      // A FIFO or device would block the worker's thread on the read below.
      if (!stats.isFile()) throw new Error(`${file} is not a regular file`);
      try {
        return { file, source: this.links.readFileSync(file, verdict).toString('utf8') };
      } catch (err) {
        if (err instanceof LinkRefusedError) throw new ControllerLinkRefusedError(file, err);
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return undefined;
  }

  private async loadIfAbsent(name: string): Promise<Entry> {
    const current = this.loaded.get(name);
    if (current) return current;
    const found = this.read(name);
    if (!found) throw new ControllerMissingError(join(this.dir, `${name}.ts`), `${name}.js`);
    const entry = await this.install(name, found.file, found.source);
    this.events.loaded(entry, 'request');
    return entry;
  }

  private async sync(name: string): Promise<void> {
    const current = this.loaded.get(name);
    const found = this.read(name);
    if (!found) {
      this.failedVersions.delete(name);
      if (current) {
        this.loaded.delete(name);
        this.events.removed(name, current.file);
        await this.retire(current);
      }
      return;
    }
    const version = versionOf(found.source);
    if (current && current.file === found.file && current.version === version) return;
    if (this.failedVersions.get(name) === version) return;
    try {
      const entry = await this.install(name, found.file, found.source);
      this.failedVersions.delete(name);
      this.events.loaded(entry, 'reload');
    } catch (err) {
      this.failedVersions.set(name, version);
      throw err;
    }
  }

  private async install(name: string, file: string, source: string): Promise<Entry> {
    const compiled = await compileController(file, source);
    const entry: Entry = { name, file, version: versionOf(source), ...compiled, active: 0, retired: false };
    const previous = this.loaded.get(name);
    this.loaded.set(name, entry);
    // Requests already running keep their reference to the old version and finish on it.
    if (previous) await this.retire(previous);
    return entry;
  }

  private async retire(entry: Entry): Promise<void> {
    entry.retired = true;
    if (entry.active === 0) await this.disposeEntry(entry);
  }

  private async disposeEntry(entry: Entry): Promise<void> {
    try {
      await entry.dispose?.();
    } catch (err) {
      this.events.disposeFailed(entry.name, err);
    }
  }
}

function versionOf(source: string): string {
  return createHash('sha256').update(source).digest('hex').slice(0, 12);
}
