// The controllers the host serves, by name. A request for a name not yet loaded reads it from disk
// (so a freshly added file is served on the next request); the watcher calls refresh() on every change
// so a loaded controller follows its file, and refreshDependents() when a local module it imports
// changes. A failed load never replaces a good version.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { Controller } from '../../common/controller.ts';
import { LinkGuard, LinkRefusedError } from '../../common/linkGuard.ts';
import type { FollowSymlinks } from '../../common/settings.ts';
import { compileController, type CompiledController } from './compile.ts';
import { ControllerLinkRefusedError, ControllerMissingError } from './errors.ts';
import { controllerFiles } from './missingController.ts';

/** Longer than the watcher's trailing refresh: a failure still on disk after it is a real one. */
const SETTLE_MS = 150;

export interface LoadedController {
  readonly name: string;
  readonly file: string;
  /** sha256 of the source and of the local modules it imports, first 12 hex digits: which version served a request. */
  readonly version: string;
  /** The local modules bundled in (absolute paths). */
  readonly dependencies: readonly string[];
  /** `file` and `dependencies`: what a call's lines name (made once a version, not once a request). */
  readonly files: readonly string[];
  readonly handler: Controller;
  /** The stack of an error from this version, with the controller's own source lines. */
  readonly mapStack: (stack: string) => string;
  /** esbuild's source map of this version's bundle (the slowlog maps its frames with it). */
  readonly sourceMap: string;
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
  /** A reload failed; `serving` is the version that keeps serving, if there is one. */
  reloadFailed(name: string, err: unknown, serving: LoadedController | undefined): void;
  disposeFailed(name: string, err: unknown): void;
}

export class ControllerRegistry {
  private readonly loaded = new Map<string, Entry>();
  /** The version of each name whose last reload failed, so the watcher's repeat check logs it once. */
  private readonly failedVersions = new Map<string, string>();
  /**
   * The failure last reported for each name, version and message: a helper's save retries every failed
   * controller (it may be the fix), and one that fails as before is not reported again.
   */
  private readonly reportedFailures = new Map<string, string>();
  /** One load at a time per name, so a request and a reload never race each other. */
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Changes the watcher has reported, so a load can tell whether the files moved under it. */
  private changes = 0;
  /** The refresh of each name that is queued and not yet started. */
  private readonly waitingRefreshes = new Map<string, Promise<void>>();
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

  /**
   * Brings `name` in line with its file on disk; logs instead of throwing. A refresh already waiting its
   * turn serves every later call: it reads the disk when it runs, so a burst of saves costs two builds, not
   * one per save.
   */
  refresh(name: string): Promise<void> {
    this.changes += 1;
    const waiting = this.waitingRefreshes.get(name);
    if (waiting) return waiting;
    const refreshed = this.serialize(name, () => {
      this.waitingRefreshes.delete(name);
      return this.sync(name);
    }).catch((err) => this.reportFailure(name, err));
    this.waitingRefreshes.set(name, refreshed);
    return refreshed;
  }

  /**
   * A local module (`file`, not itself a controller) changed: refreshes every controller that bundles it,
   * and every one whose last load failed (its imports are unknown, and this may be the fix).
   */
  refreshDependents(file: string): Promise<void> {
    this.changes += 1;
    const names = new Set([...this.loaded.values()].filter((entry) => entry.dependencies.includes(file)).map((entry) => entry.name));
    for (const name of this.failedVersions.keys()) {
      this.failedVersions.delete(name);
      names.add(name);
    }
    return Promise.all([...names].map((name) => this.refresh(name))).then(() => undefined);
  }

  /**
   * Reports a failed reload, unless the file has changed since: an editor that truncates and then writes
   * (or a copy still under way) shows a half-written file for a moment, and its next event loads the rest.
   */
  private async reportFailure(name: string, err: unknown): Promise<void> {
    const tried = this.failedVersions.get(name);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    if (tried !== undefined && (this.failedVersions.get(name) !== tried || this.versionOnDisk(name) !== tried)) return;
    const failure = `${tried}\0${(err as Error).message ?? String(err)}`;
    if (this.reportedFailures.get(name) === failure) return;
    this.reportedFailures.set(name, failure);
    this.events.reloadFailed(name, err, this.loaded.get(name));
  }

  /** The version `name` would have now, its local modules being those of its loaded version; undefined if gone. */
  private versionOnDisk(name: string): string | undefined {
    try {
      const found = this.read(name);
      return found && versionOf(found.source, this.loaded.get(name)?.dependencies ?? []);
    } catch {
      return undefined;
    }
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
    for (const file of controllerFiles(this.dir, name)) {
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

  private async loadIfAbsent(name: string, retried = false): Promise<Entry> {
    const current = this.loaded.get(name);
    if (current) return current;
    const found = this.read(name);
    if (!found) throw new ControllerMissingError(this.dir, name);
    const changesBefore = this.changes;
    let entry: Entry;
    try {
      entry = await this.install(name, found.file, found.source);
    } catch (err) {
      // A first load that met a save half-written (its own file or a helper's) is tried again once the
      // files have settled, as a reload is; a file that stays broken fails as it is.
      if (retried) throw err;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      if (this.changes === changesBefore) throw err;
      return this.loadIfAbsent(name, true);
    }
    this.reportedFailures.delete(name);
    this.events.loaded(entry, 'request');
    return entry;
  }

  private async sync(name: string): Promise<void> {
    const current = this.loaded.get(name);
    const found = this.read(name);
    if (!found) {
      this.failedVersions.delete(name);
      this.reportedFailures.delete(name);
      if (current) {
        this.loaded.delete(name);
        this.events.removed(name, current.file);
        await this.retire(current);
      }
      return;
    }
    const version = versionOf(found.source, current?.dependencies ?? []);
    if (current && current.file === found.file && current.version === version) return;
    if (this.failedVersions.get(name) === version) return;
    try {
      const entry = await this.install(name, found.file, found.source);
      this.failedVersions.delete(name);
      this.reportedFailures.delete(name);
      this.events.loaded(entry, 'reload');
    } catch (err) {
      this.failedVersions.set(name, version);
      throw err;
    }
  }

  private async install(name: string, file: string, source: string): Promise<Entry> {
    const compiled = await compileController(file, source, this.dir);
    const version = versionOf(source, compiled.dependencies, compiled.dependencySources);
    const entry: Entry = { name, file, version, ...compiled, files: [file, ...compiled.dependencies], active: 0, retired: false };
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

/**
 * The hash of a controller's source and of each local module it imports: as built (`built`), or read here,
 * on the calling thread as the source is, to see whether anything changed since. A controller with none
 * keeps the hash of its source alone.
 */
function versionOf(source: string, dependencies: readonly string[], built?: ReadonlyMap<string, string>): string {
  const hash = createHash('sha256').update(source);
  for (const file of [...dependencies].sort()) {
    hash.update(`\0${file}\0`);
    try {
      hash.update(built?.get(file) ?? readFileSync(file, 'utf8'));
    } catch {
      hash.update('\0missing');
    }
  }
  return hash.digest('hex').slice(0, 12);
}
