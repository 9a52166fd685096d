// The table of workers the proxies on this machine follow (WORKERS_PATH, one JSON line each time it changes): the
// workers that take requests, and the last that exited unasked with the request that caused each death, if known.
import type { ServerResponse } from 'node:http';
import type { WorkerTable } from '../../common/protocol.ts';

/** Unasked exits the table names, the last ones. */
const EXITS_PUBLISHED = 16;

export class WorkersFeed {
  private readonly followers = new Set<ServerResponse>();
  /** The last workers that exited unasked, for the proxies: what they had sent there died with them. */
  private readonly exitedUnasked: number[] = [];
  /** Of those, the ones whose death has a known cause: the request that caused it. */
  private readonly culprits = new Map<number, string>();
  /** Exits whose cause is still being read: the table waits for them (it names the culprits). */
  draining = 0;

  /** `listed`: the workers that take requests now, and --worker-concurrency. */
  constructor(private readonly listed: () => Pick<WorkerTable, 'concurrency' | 'workers'>) {}

  table(): WorkerTable {
    const { concurrency, workers } = this.listed();
    return { concurrency, workers, exited: this.exitedUnasked, culprits: Object.fromEntries(this.culprits) };
  }

  publish(): void {
    // A worker's exit is published once its cause is read: a proxy must not take it for a retirement meanwhile.
    if (this.followers.size === 0 || this.draining > 0) return;
    const line = `${JSON.stringify(this.table())}\n`;
    for (const res of this.followers) res.write(line);
  }

  /** A proxy follows the table: the table now, then each change. */
  follow(res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    res.write(`${JSON.stringify(this.table())}\n`);
    this.followers.add(res);
    res.once('close', () => this.followers.delete(res));
  }

  exited(pid: number, culprit: string | undefined): void {
    this.exitedUnasked.splice(0, this.exitedUnasked.push(pid) - EXITS_PUBLISHED);
    if (culprit) this.culprits.set(pid, culprit);
    for (const known of this.culprits.keys()) if (!this.exitedUnasked.includes(known)) this.culprits.delete(known);
  }

  /** The pool stops: its followers are let go. */
  end(): void {
    for (const res of this.followers) res.end();
  }
}
