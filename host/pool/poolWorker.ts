// One worker as the primary knows it, in one record: its dispatcher slot, its channel, what it last reported,
// what it said of its death; and the table that finds a record from its cluster worker or its slot.
import type { Worker } from 'node:cluster';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { childEndpoint, IpcChannel } from '../../common/ipc.ts';
import type { WorkerEnd } from '../../common/workerLoss.ts';
import {
  WATCHDOG_LOG_FD,
  type DeathCause,
  type PoolSays,
  type WatchdogLine,
  type WireHostEntry,
  type WorkerSays,
} from '../wire/poolMessages.ts';
import type { WorkerSnapshot } from '../wire/stats.ts';
import type { WorkerSlot } from './dispatcher.ts';
import { quietSince } from './pmPolicy.ts';

/** Half the proxy's wait for /status (proxy/observe/serverStatus.ts): a worker stuck in a loop shows as unresponsive. */
const SNAPSHOT_TIMEOUT_MS = 500;

export class PoolWorker {
  readonly channel: IpcChannel<PoolSays, WorkerSays>;
  /** Its server listens; before, it shows as `starting` on /status without being asked. */
  up = false;
  /** Stopped as idle by a dynamic or ondemand pool: not counted as recycled. */
  reaped = false;
  /**
   * Its last counters, so that no total falls below what /status (and so Prometheus) has shown when it stops
   * answering or dies; undefined once its final stats are in the pool's departed totals.
   */
  lastReported: WorkerSnapshot | undefined;
  /** Retiring, its final stats in the departed totals: no longer summed as live, or it would count twice. */
  handedOver = false;
  /** Since when it has run nothing, as it last said (pmPolicy.ts quietSince). */
  quiet: { requests: number; since: number } | undefined;
  /** Resolves its start once it listens. */
  listened: (() => void) | undefined;
  /** What it said of its coming death, read from its watchdog pipe. */
  deathCause: DeathCause | undefined;
  /** Settles once its watchdog pipe is read to its end: its death line, if any, has been read. */
  pipeEnded: Promise<void> | undefined;
  /** The replacement delay after it exited unasked: its death line is written once its pipe is read. */
  exitDelay: number | undefined;
  private fate: { promise: Promise<WorkerEnd>; settle: (end: WorkerEnd) => void } | undefined;

  constructor(
    readonly worker: Worker,
    readonly slot: WorkerSlot,
  ) {
    this.channel = new IpcChannel<PoolSays, WorkerSays>(childEndpoint(worker.process));
  }

  get pid(): number | undefined {
    return this.worker.process.pid;
  }

  /** How it ended, once it has: for the relay's requests that died with it. */
  end(): { promise: Promise<WorkerEnd>; settle: (end: WorkerEnd) => void } {
    if (!this.fate) {
      let settle!: (end: WorkerEnd) => void;
      const promise = new Promise<WorkerEnd>((resolve) => (settle = resolve));
      this.fate = { promise, settle };
    }
    return this.fate;
  }

  /** Its counters now; one that does not answer (blocked, or dying) counts what it last reported: no total goes back. */
  snapshot(): Promise<WorkerSnapshot> {
    const last = this.lastReported;
    const placeholder = (state: 'starting' | 'unresponsive'): WorkerSnapshot => ({
      pid: this.pid ?? 0,
      state,
      requests: last?.requests ?? 0,
      inFlight: 0,
      lastRequest: last?.lastRequest,
      lastDurationMs: last?.lastDurationMs,
      rss: last?.rss ?? 0,
      startedAt: last?.startedAt ?? '',
      controllers: last?.controllers ?? {},
    });
    if (!this.up) return Promise.resolve(placeholder('starting'));
    return this.channel.request('stats', null, SNAPSHOT_TIMEOUT_MS).then(
      (snapshot) => {
        this.lastReported = snapshot;
        this.quiet = quietSince(this.quiet, snapshot, performance.now());
        return snapshot;
      },
      () => placeholder('unresponsive'),
    );
  }
}

/** The primary's workers, spares included: a record found from its cluster worker or from its dispatcher slot. */
export class PoolWorkers {
  private readonly byWorker = new WeakMap<Worker, PoolWorker>();
  private readonly bySlot = new WeakMap<WorkerSlot, PoolWorker>();

  add(record: PoolWorker): PoolWorker {
    this.byWorker.set(record.worker, record);
    this.bySlot.set(record.slot, record);
    return record;
  }

  of(worker: Worker): PoolWorker | undefined {
    return this.byWorker.get(worker);
  }

  ofSlot(slot: WorkerSlot): PoolWorker | undefined {
    return this.bySlot.get(slot);
  }
}

/**
 * Reads a worker's watchdog pipe (fd WATCHDOG_LOG_FD), written by its watchdog thread while the worker's thread (and
 * so its IPC) is blocked: host.log events, whether its event loop turns, and the known cause of its coming death.
 */
export function readWatchdogPipe(
  record: PoolWorker,
  said: {
    blockedChanged: (blocked: boolean, running: string[]) => void;
    entry: (entry: WireHostEntry) => void;
    unreadable: (line: string) => void;
  },
): void {
  const lines = createInterface({ input: record.worker.process.stdio[WATCHDOG_LOG_FD] as Readable });
  record.pipeEnded = new Promise((resolve) => lines.once('close', resolve));
  lines.on('line', (line) => {
    try {
      const read = JSON.parse(line) as WatchdogLine;
      if ('blocked' in read) return said.blockedChanged(read.blocked, read.running);
      if ('death' in read) return void (record.deathCause = read.death);
      said.entry(read);
    } catch {
      said.unreadable(line);
    }
  });
}
