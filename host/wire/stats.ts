// What one host worker has done, for /status (php-fpm's pm.status_path): counters kept on the hot
// path with plain field updates, turned into a snapshot only when asked.
// Controller names come from clients (any identifier, `__proto__` and `constructor` included), so every
// table keyed by one is a Map or a null-prototype object, and the number of names is bounded: requests for
// names with no file count under MISSING_CONTROLLERS, and names past MAX_CONTROLLER_ROWS under OTHER_CONTROLLERS.
import { nullObject } from '../../common/nullObject.ts';

/** The row for every request whose controller has no file: a client cannot mint rows by inventing names. */
export const MISSING_CONTROLLERS = '(missing)';
/** The row for controllers past MAX_CONTROLLER_ROWS (each one has a file, so only an operator can get there). */
export const OTHER_CONTROLLERS = '(other)';
/** Rows per table, the two above included: /status and /metrics stay small whatever www/controllers holds. */
export const MAX_CONTROLLER_ROWS = 500;

/** The row a name not yet in a table of `rows` rows goes to: its own, or OTHER_CONTROLLERS once the table is full. */
function newRowFor(name: string, rows: number): string {
  return rows < MAX_CONTROLLER_ROWS - 1 ? name : OTHER_CONTROLLERS;
}

export interface ControllerCounters {
  requests: number;
  errors: number;
  loadFailures: number;
  /** Requests whose client left while the controller ran (counted apart from errors; absent until one did). */
  aborts?: number;
  /** Versions installed because the file changed on disk (the first load on a request not counted). */
  reloads: number;
  /** ISO time of the last (re)load, and the version it installed. */
  lastReload: string | undefined;
  version: string | undefined;
}

export interface WorkerSnapshot {
  pid: number;
  state: 'starting' | 'idle' | 'busy' | 'retiring' | 'unresponsive';
  requests: number;
  inFlight: number;
  lastRequest: string | undefined;
  lastDurationMs: number | undefined;
  rss: number;
  startedAt: string;
  controllers: Record<string, ControllerCounters>;
}

export class WorkerStats {
  requests = 0;
  inFlight = 0;
  retiring = false;
  starting = true;
  /** The last request's method and URL, joined only when a snapshot shows them. */
  private lastMethod: string | undefined;
  private lastUrl: string | undefined;
  private lastDurationMs: number | undefined;
  private readonly startedAt = new Date().toISOString();
  private readonly controllers = new Map<string, ControllerCounters>();

  /** The counters of `name`: a controller that has a file, or MISSING_CONTROLLERS. */
  controller(name: string): ControllerCounters {
    let counters = this.controllers.get(name);
    if (!counters) {
      const row = newRowFor(name, this.controllers.size);
      counters = this.controllers.get(row);
      if (!counters) {
        counters = { requests: 0, errors: 0, loadFailures: 0, reloads: 0, lastReload: undefined, version: undefined };
        this.controllers.set(row, counters);
      }
    }
    return counters;
  }

  begin(): number {
    this.requests += 1;
    this.inFlight += 1;
    return performance.now();
  }

  end(startedAt: number, method: string, url: string): void {
    this.inFlight -= 1;
    this.lastMethod = method;
    this.lastUrl = url;
    this.lastDurationMs = Math.round((performance.now() - startedAt) * 1000) / 1000;
  }

  loaded(name: string, version: string, reason: 'request' | 'reload'): void {
    const counters = this.controller(name);
    if (reason === 'reload') counters.reloads += 1;
    counters.lastReload = new Date().toISOString();
    counters.version = version;
  }

  snapshot(): WorkerSnapshot {
    return {
      pid: process.pid,
      state: this.starting ? 'starting' : this.retiring ? 'retiring' : this.inFlight > 0 ? 'busy' : 'idle',
      requests: this.requests,
      inFlight: this.inFlight,
      lastRequest: this.lastMethod === undefined ? undefined : `${this.lastMethod} ${this.lastUrl}`,
      lastDurationMs: this.lastDurationMs,
      rss: process.memoryUsage.rss(),
      startedAt: this.startedAt,
      controllers: Object.fromEntries(this.controllers),
    };
  }
}

export interface PoolStatus extends PoolFields {
  pool: string;
  pid: number;
  startedAt: string;
  /** Worker processes alive, by state (they add up to `workers`). */
  workers: number;
  states: Record<WorkerSnapshot['state'], number>;
  /** Since the pool started, workers gone included (php-fpm's "accepted conn": it never goes down). */
  acceptedRequests: number;
  /** Workers replaced since the pool started: after an unexpected exit, or recycled on their own request. */
  restarts: { exited: number; recycled: number };
  /** Per controller, since the pool started; versions lists each distinct version served now. */
  controllers: Record<string, Omit<ControllerCounters, 'version'> & { versions: string[] }>;
  /** Only with ?full. */
  processes?: WorkerSnapshot[];
}

/** php-fpm's /status pool fields ("listen queue" as listenQueue…), from the pool and its dispatcher (host/pool/dispatcher.ts). */
export interface PoolFields {
  processManager: string;
  /** The settings that shape the pool in its mode (`--pm dynamic --workers 4 --start-workers 2 …`). */
  processManagerSettings: string;
  /** --worker-concurrency: the most requests a worker runs at once; 0 = unlimited. */
  workerConcurrency: number;
  /** Requests waiting for a free worker now, the most ever, and the bound (--listen-backlog). */
  listenQueue: number;
  maxListenQueue: number;
  listenQueueLen: number;
  idleProcesses: number;
  activeProcesses: number;
  /** Workers whose event loop has not turned for a while: they are sent nothing new until it does. */
  blockedProcesses: number;
  /** Controller requests the workers run now, as each counts them (a proxy sends most of them straight there). */
  requestsInFlight: number;
  totalProcesses: number;
  maxActiveProcesses: number;
  /** Times the pool wanted another worker and was at --workers (dynamic, ondemand). */
  maxChildrenReached: number;
}

/**
 * What the pool counts beyond its live workers: what the workers that have gone did (so its totals never go
 * backwards), and the requests for controllers with no file that the primary answered itself.
 */
export interface Departed {
  requests: number;
  controllers: Record<string, { requests: number; errors: number; loadFailures: number; reloads: number; aborts?: number }>;
  restarts: PoolStatus['restarts'];
}

export function departedNone(): Departed {
  return { requests: 0, controllers: nullObject(), restarts: { exited: 0, recycled: 0 } };
}

/** The row of `table` that counts `name`, made when absent; at most MAX_CONTROLLER_ROWS rows. */
function rowOf<T>(table: Record<string, T>, name: string, make: () => T): T {
  const existing = table[name];
  if (existing !== undefined) return existing;
  const row = newRowFor(name, Object.keys(table).length);
  return (table[row] ??= make());
}

export function addDeparted(departed: Departed, gone: WorkerSnapshot): void {
  departed.requests += gone.requests;
  for (const [name, c] of Object.entries(gone.controllers)) {
    const total = rowOf<Departed['controllers'][string]>(departed.controllers, name, () => ({
      requests: 0,
      errors: 0,
      loadFailures: 0,
      reloads: 0,
    }));
    total.requests += c.requests;
    total.errors += c.errors;
    total.loadFailures += c.loadFailures;
    if (c.aborts) total.aborts = (total.aborts ?? 0) + c.aborts;
    total.reloads += c.reloads;
  }
}

/** A request for a controller with no file, answered by the primary: counted as a worker counted it. */
export function countMissingAnswered(departed: Departed): void {
  departed.requests += 1;
  const row = rowOf(departed.controllers, MISSING_CONTROLLERS, () => ({ requests: 0, errors: 0, loadFailures: 0, reloads: 0 }));
  row.requests += 1;
  row.loadFailures += 1;
}

/** Sums the live workers' snapshots and the departed totals into the pool view (pure). */
export function summarize(
  pid: number,
  startedAt: string,
  snapshots: WorkerSnapshot[],
  departed: Departed,
  pool: PoolFields,
  full: boolean,
): PoolStatus {
  const controllers: PoolStatus['controllers'] = nullObject();
  const totalOf = (name: string) =>
    rowOf(controllers, name, () => ({
      requests: 0,
      errors: 0,
      loadFailures: 0,
      reloads: 0,
      lastReload: undefined,
      versions: [] as string[],
    }));
  for (const [name, c] of Object.entries(departed.controllers)) {
    const total = totalOf(name);
    total.requests += c.requests;
    total.errors += c.errors;
    total.loadFailures += c.loadFailures;
    if (c.aborts) total.aborts = (total.aborts ?? 0) + c.aborts;
    total.reloads += c.reloads;
  }
  for (const worker of snapshots) {
    for (const [name, c] of Object.entries(worker.controllers)) {
      const total = totalOf(name);
      total.requests += c.requests;
      total.errors += c.errors;
      total.loadFailures += c.loadFailures;
      if (c.aborts) total.aborts = (total.aborts ?? 0) + c.aborts;
      total.reloads += c.reloads;
      if (c.lastReload && (!total.lastReload || c.lastReload > total.lastReload)) total.lastReload = c.lastReload;
      if (c.version && !total.versions.includes(c.version)) total.versions.push(c.version);
    }
  }
  const states: PoolStatus['states'] = { starting: 0, idle: 0, busy: 0, retiring: 0, unresponsive: 0 };
  for (const worker of snapshots) states[worker.state] += 1;
  const status: PoolStatus = {
    pool: 'extqs-host',
    pid,
    startedAt,
    workers: snapshots.length,
    states,
    acceptedRequests: departed.requests + snapshots.reduce((sum, w) => sum + w.requests, 0),
    restarts: { ...departed.restarts },
    controllers,
    ...pool,
  };
  if (full) status.processes = snapshots;
  return status;
}
