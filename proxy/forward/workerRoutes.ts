// A host's workers as this proxy routes to them. The host primary publishes its table of workers
// (common/protocol.ts WORKERS_PATH): this proxy follows it on one long request, sends each controller
// request straight to the least busy worker that is not blocked (common/leastBusy.ts, Passenger's router),
// and sends it through the primary when the table has none, when the host bounds each worker's concurrency
// (one router alone can keep a bound), or while it cannot follow the table. So a request crosses one
// process fewer, at bare Node's cost per hop, and the primary still queues what no worker can take.
import type { ClientRequest } from 'node:http';
import { HostTarget } from '../../common/hostTarget.ts';
import { leastBusy, type RouteCandidate } from '../../common/leastBusy.ts';
import { WORKERS_PATH, type WorkerTable } from '../../common/protocol.ts';
import type { Upstream } from '../../common/settingParsers.ts';
import type { WorkerEnd } from '../../common/workerLoss.ts';
import { InFlightList } from './inFlightList.ts';

/**
 * The wait before following the table again after it broke off, doubling up to the most; after an upstream that
 * publishes none (another server, an older host), `unpublished`: it is served through its address meanwhile.
 */
const FOLLOW_AGAIN_MS = { first: 200, most: 5_000, unpublished: 60_000 } as const;

/** A request this proxy sent a worker, which it can send elsewhere while it has no answer. */
export interface SentRequest {
  readonly requestId: string;
  /** Its worker is blocked and the request never started there: to another worker, or the primary. */
  reroute(): void;
}

/** One host worker as this proxy sees it: its socket, and the requests this proxy has in flight there. */
export class WorkerTarget implements RouteCandidate {
  readonly sent = new InFlightList<SentRequest>();
  blocked = false;
  /** While blocked: the request ids of the calls it runs, as its host's table last said. */
  running: readonly string[] = [];
  accepting = true;
  readonly upstream: Upstream;
  /** What the engines connect to it through. */
  readonly target: HostTarget;
  private settleFate: ((fate: WorkerEnd) => void) | undefined;
  /** Settles when it leaves the table: its process exited unasked (with the request that caused it, if known), or it retires. */
  private readonly fate = new Promise<WorkerEnd>((resolve) => (this.settleFate = resolve));

  constructor(
    readonly pid: number,
    readonly socket: string,
  ) {
    this.upstream = { kind: 'unix', path: socket };
    this.target = new HostTarget(this.upstream);
  }

  get inFlight(): number {
    return this.sent.size;
  }

  /** Why it left the table, once it has; undefined if it has not within `ms`. */
  fateWithin(ms: number): Promise<WorkerEnd> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
    return Promise.race([this.fate, late]).finally(() => clearTimeout(timer));
  }

  /** It left the table (it retires, or it died, `culprit`'s controller the cause when known): from now on it takes nothing. */
  leave(died: boolean, culprit?: string): boolean {
    this.settleFate?.(died ? { died, culprit } : { died });
    if (!this.accepting) return false;
    this.accepting = false;
    return true;
  }
}

export interface HostWorkerEvents {
  /** A worker left the table (it retires or exited): its idle connections are to be closed. */
  left(target: WorkerTarget): void;
}

/** A line of the table, or undefined when it is not one (a server that answers anything with 200). */
function tableOf(line: string): WorkerTable | undefined {
  try {
    const table = JSON.parse(line) as Partial<WorkerTable> | null;
    const ok = typeof table?.concurrency === 'number' && Array.isArray(table.workers) && Array.isArray(table.exited);
    return ok ? (table as WorkerTable) : undefined;
  } catch {
    return undefined;
  }
}

export class HostWorkers {
  private workers: WorkerTarget[] = [];
  /** Until the table says 0, everything goes through the primary. */
  private concurrency = -1;
  private following: ClientRequest | undefined;
  private retry: NodeJS.Timeout | undefined;
  private wait: number = FOLLOW_AGAIN_MS.first;
  private closed = false;
  /** The host primary: plain, as only a host on a unix socket publishes its table (forwardingCore.ts follows no other). */
  private readonly primary: HostTarget;

  constructor(
    /** The host primary's address. */
    primary: Upstream,
    private readonly events: HostWorkerEvents,
  ) {
    this.primary = new HostTarget(primary);
  }

  /** The worker for the next request, or undefined to send it through the primary. */
  pick(except?: WorkerTarget): WorkerTarget | undefined {
    if (this.concurrency !== 0) return undefined;
    return leastBusy(except ? this.workers.filter((worker) => worker !== except) : this.workers, 0);
  }

  /** A worker this proxy could not connect to: left out until the next table. */
  unreachable(target: WorkerTarget): void {
    this.leave(target, false);
    this.workers = this.workers.filter((worker) => worker !== target);
  }

  /** Starts following the table; again after it breaks off, until close(). */
  follow(): void {
    if (this.closed) return;
    let buffered = '';
    const req = this.primary.request({ path: WORKERS_PATH, agent: false, headers: { host: 'localhost' } }, (res) => {
      if (res.statusCode !== 200) {
        this.wait = FOLLOW_AGAIN_MS.unpublished;
        res.resume();
        return;
      }
      this.wait = FOLLOW_AGAIN_MS.first;
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        buffered += text;
        let end: number;
        while ((end = buffered.indexOf('\n')) >= 0) {
          const table = tableOf(buffered.slice(0, end));
          buffered = buffered.slice(end + 1);
          if (table) {
            this.apply(table);
            continue;
          }
          // Not an extqs host's table: nothing is sent to it but its own address.
          this.wait = FOLLOW_AGAIN_MS.unpublished;
          return void req.destroy();
        }
      });
    });
    // It never holds a stopping proxy up.
    req.on('socket', (socket) => socket.unref());
    req.on('error', () => undefined);
    req.on('close', () => {
      if (this.following !== req) return;
      this.following = undefined;
      this.apply({ concurrency: -1, workers: [], exited: [] });
      if (this.closed) return;
      this.retry = setTimeout(() => this.follow(), this.wait).unref();
      this.wait = Math.min(this.wait * 2, FOLLOW_AGAIN_MS.most);
    });
    req.end();
    this.following = req;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    this.following?.destroy();
  }

  private apply(table: WorkerTable): void {
    this.concurrency = table.concurrency;
    const known = new Map(this.workers.map((worker) => [worker.socket, worker]));
    const blockedNow: [WorkerTarget, string[]][] = [];
    this.workers = table.workers.map(({ pid, socket, blocked, running }) => {
      const worker = known.get(socket) ?? new WorkerTarget(pid, socket);
      known.delete(socket);
      if (blocked && !worker.blocked) blockedNow.push([worker, running]);
      worker.blocked = blocked;
      worker.running = running;
      return worker;
    });
    for (const gone of known.values()) this.leave(gone, table.exited.includes(gone.pid), table.culprits?.[gone.pid]);
    // What waits in a blocked worker's socket behind the call that blocks it would wait for that call's end.
    for (const [worker, running] of blockedNow)
      for (const request of [...worker.sent]) if (!running.includes(request.requestId)) request.reroute();
  }

  private leave(target: WorkerTarget, died: boolean, culprit?: string): void {
    if (target.leave(died, culprit)) this.events.left(target);
  }
}
