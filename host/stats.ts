// What one host worker has done, for /status (php-fpm's pm.status_path): counters kept on the hot
// path with plain field updates, turned into a snapshot only when asked.

export interface ControllerCounters {
  requests: number;
  errors: number;
  loadFailures: number;
  /** ISO time of the last (re)load, and the version it installed. */
  lastReload: string | undefined;
  version: string | undefined;
}

export interface WorkerSnapshot {
  pid: number;
  state: 'idle' | 'busy' | 'retiring' | 'unresponsive';
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
  private lastRequest: string | undefined;
  private lastDurationMs: number | undefined;
  private readonly startedAt = new Date().toISOString();
  private readonly controllers = new Map<string, ControllerCounters>();

  controller(name: string): ControllerCounters {
    let counters = this.controllers.get(name);
    if (!counters) {
      counters = { requests: 0, errors: 0, loadFailures: 0, lastReload: undefined, version: undefined };
      this.controllers.set(name, counters);
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
    this.lastRequest = `${method} ${url}`;
    this.lastDurationMs = Math.round((performance.now() - startedAt) * 1000) / 1000;
  }

  loaded(name: string, version: string): void {
    const counters = this.controller(name);
    counters.lastReload = new Date().toISOString();
    counters.version = version;
  }

  snapshot(): WorkerSnapshot {
    return {
      pid: process.pid,
      state: this.retiring ? 'retiring' : this.inFlight > 0 ? 'busy' : 'idle',
      requests: this.requests,
      inFlight: this.inFlight,
      lastRequest: this.lastRequest,
      lastDurationMs: this.lastDurationMs,
      rss: process.memoryUsage.rss(),
      startedAt: this.startedAt,
      controllers: Object.fromEntries(this.controllers),
    };
  }
}

export interface PoolStatus {
  pool: string;
  pid: number;
  startedAt: string;
  workers: number;
  idleWorkers: number;
  busyWorkers: number;
  acceptedRequests: number;
  /** Per controller, summed over the workers; versions lists each distinct version being served. */
  controllers: Record<string, Omit<ControllerCounters, 'version'> & { versions: string[] }>;
  /** Only with ?full. */
  processes?: WorkerSnapshot[];
}

/** Sums worker snapshots into the pool view (pure, tested without processes). */
export function summarize(pid: number, startedAt: string, snapshots: WorkerSnapshot[], full: boolean): PoolStatus {
  const controllers: PoolStatus['controllers'] = {};
  for (const worker of snapshots) {
    for (const [name, c] of Object.entries(worker.controllers)) {
      const total = (controllers[name] ??= { requests: 0, errors: 0, loadFailures: 0, lastReload: undefined, versions: [] });
      total.requests += c.requests;
      total.errors += c.errors;
      total.loadFailures += c.loadFailures;
      if (c.lastReload && (!total.lastReload || c.lastReload > total.lastReload)) total.lastReload = c.lastReload;
      if (c.version && !total.versions.includes(c.version)) total.versions.push(c.version);
    }
  }
  const status: PoolStatus = {
    pool: 'extqs-host',
    pid,
    startedAt,
    workers: snapshots.length,
    idleWorkers: snapshots.filter((w) => w.state === 'idle').length,
    busyWorkers: snapshots.filter((w) => w.state === 'busy').length,
    acceptedRequests: snapshots.reduce((sum, w) => sum + w.requests, 0),
    controllers,
  };
  if (full) status.processes = snapshots;
  return status;
}
