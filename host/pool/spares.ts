// Spare workers (--spare-workers): started ahead, listening but out of the table, each loading the controllers the
// pool serves; one takes the place of the next worker that dies or retires, and its own replacement starts behind it.
import { rm } from 'node:fs/promises';
import type { HostLog } from '../wire/hostLog.ts';
import { keepsSpare, sparesToStart, sparesToStop } from './pmPolicy.ts';
import type { PoolWorker } from './poolWorker.ts';

/** A spare that exits is started again after this long: one that cannot start must not start again in a loop. */
const SPARE_RESTART_MS = 1_000;

/**
 * A spare that took a place is followed this long after: a Node process booting takes a core for most of a second,
 * and took it from the spare's first requests (200-300 ms on a loaded machine instead of under 50: docs/operations.md).
 */
const SUCCESSOR_DELAY_MS = 500;

export interface SparesOf {
  /** Forks a worker and listens to it (host/pool/workerStart.ts). */
  fork(): PoolWorker;
  /** The pool stops: no spare starts again. */
  stopped(): boolean;
  /** --spare-workers, as read live. */
  wanted(): number;
  /** The workers that take or will take requests: spares load what they have loaded. */
  serving(): PoolWorker[];
  log: Pick<HostLog, 'info' | 'error'>;
}

export class Spares {
  /** Spares listening, in the order they came: the first takes the next place. */
  private readonly listening: PoolWorker[] = [];
  /** Spares, listening or not. */
  private readonly all = new Set<PoolWorker>();

  constructor(private readonly pool: SparesOf) {}

  has(record: PoolWorker): boolean {
    return this.all.has(record);
  }

  /** Every spare, listening or not (each is told what every worker is told: quarantines). */
  get workers(): PoolWorker[] {
    return [...this.all];
  }

  /** Starts a spare: listening, out of the table, until it takes a place. */
  start(): void {
    const record = this.pool.fork();
    const { worker } = record;
    this.all.add(record);
    worker.once('exit', (code, signal) => {
      if (!this.all.delete(record)) return;
      this.forget(record);
      rm(record.slot.socketPath, { force: true }).catch(() => undefined);
      if (this.pool.stopped()) return;
      this.pool.log.error(
        `Spare worker ${worker.process.pid} exited with ${signal ? `signal ${signal}` : `code ${code}`}; starting a new one in ${SPARE_RESTART_MS} ms`,
      );
      setTimeout(() => {
        if (!this.pool.stopped() && this.all.size < this.pool.wanted()) this.start();
      }, SPARE_RESTART_MS).unref();
    });
  }

  /** A spare listens: it loads the controllers the pool's workers serve, and waits. */
  listens(record: PoolWorker): void {
    if (this.pool.stopped() || !keepsSpare(this.all.size, this.pool.wanted())) return void record.worker.process.kill('SIGTERM');
    this.listening.push(record);
    this.pool.log.info(`Worker ${record.pid} is spare: it takes the place of the next worker that dies or retires`);
    this.preload();
  }

  /** Starts the successor of a spare that took a place, once that spare has had time to serve its first requests. */
  startBehind(): void {
    setTimeout(() => {
      if (!this.pool.stopped() && this.all.size < this.pool.wanted()) this.start();
    }, SUCCESSOR_DELAY_MS).unref();
  }

  /** The spare that takes the next place, if one listens; the caller puts it in the table and calls startBehind(). */
  take(): PoolWorker | undefined {
    const spare = this.listening.shift();
    if (!spare) return undefined;
    this.all.delete(spare);
    this.pool.log.info(`Spare worker ${spare.pid} takes a place in the pool`);
    return spare;
  }

  /** Each spare loads the controllers the pool's workers have served (once a second while there are spares). */
  preload(): void {
    if (this.listening.length === 0) return;
    void Promise.all(
      this.pool
        .serving()
        .filter((w) => w.up)
        .map((w) => w.snapshot()),
    ).then((snapshots) => {
      const controllers = [...new Set(snapshots.flatMap((s) => Object.keys(s.controllers)))].filter((name) => /^[A-Za-z_]\w*$/.test(name));
      for (const spare of this.listening) spare.channel.notify('preload', { controllers });
    });
  }

  /** Starts or stops spares to match --spare-workers. */
  fit(): void {
    for (let n = sparesToStart(this.all.size, this.pool.wanted()); n > 0; n--) this.start();
    void this.stop(sparesToStop(this.listening, this.pool.wanted()));
  }

  /** Stops every spare (new settings, or the pool stops); resolves once they exited. */
  stopAll(): Promise<unknown> {
    return this.stop([...this.all]);
  }

  /** Stops `leaving` spares, forgotten first: their exits are not spares' deaths to make up for. Resolves once they exited. */
  private stop(leaving: PoolWorker[]): Promise<unknown> {
    const exits = leaving.map(({ worker }): Promise<unknown> => {
      return worker.process.exitCode === null && worker.process.signalCode === null
        ? new Promise((resolve) => worker.once('exit', resolve))
        : Promise.resolve();
    });
    for (const record of leaving) {
      this.all.delete(record);
      this.forget(record);
    }
    for (const { worker } of leaving) worker.process.kill('SIGTERM');
    return Promise.all(exits);
  }

  private forget(record: PoolWorker): void {
    const at = this.listening.indexOf(record);
    if (at >= 0) this.listening.splice(at, 1);
  }
}
