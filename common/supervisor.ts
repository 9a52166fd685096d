// The one owner of a set of child processes of one role (the launcher's host or proxy, the proxy's
// workers, the host's workers): starts them, replaces one that dies (paced by common/restartPace.ts),
// replaces one that asks to retire by starting its successor first, and stops them all with a signal,
// then SIGKILL after a grace period. How a child is started and what "ready" means are its user's
// (launch()); what happened is told to the user (events), which writes its own log lines.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { RestartPace, type PacePolicy } from './restartPace.ts';

/** A child just started: `handle` is what the user keeps (a cluster Worker, a ChildProcess...). */
export interface Launched<H, R> {
  handle: H;
  process: ChildProcess;
  /** Settles when the child is ready (with what it said) or cannot be (it exited first, it reported why). */
  ready: Promise<R>;
}

/** How a child ended: `signal SIGKILL` or `code 1`, as the log lines say it. */
export type ExitHow = string;

export interface SupervisorEvents<H> {
  /** Every exit, whatever its cause, before anything is decided about it (counters, clean-up). */
  left?(handle: H, how: ExitHow, was: 'starting' | 'ready' | 'retiring'): void;
  /** A ready child exited unasked: its replacement starts in `delayMs`. */
  exited?(handle: H, how: ExitHow, delayMs: number): void;
  /** A replacement for one that exited could not become ready: the next try is in `delayMs`. */
  restartFailed?(err: Error, delayMs: number): void;
  /** The successor of a child that asked to retire could not become ready: the old one keeps serving; again in `delayMs`. */
  replaceFailed?(old: H, err: Error, delayMs: number): void;
}

export interface SupervisorOptions<H, R> {
  launch(): Launched<H, R>;
  pace: PacePolicy;
  /** Asks a child to finish what it holds and exit (its successor is ready); SIGTERM unless said otherwise. */
  retire?(handle: H, process: ChildProcess): void;
  events?: SupervisorEvents<H>;
}

interface Child<H> {
  handle: H;
  process: ChildProcess;
  state: 'starting' | 'ready' | 'retiring';
}

export class Supervisor<H, R> {
  private readonly children = new Map<H, Child<H>>();
  private readonly pace: RestartPace;
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopping = false;

  constructor(private readonly options: SupervisorOptions<H, R>) {
    this.pace = new RestartPace(options.pace);
  }

  /** The children alive now (starting, ready or retiring). */
  get handles(): H[] {
    return [...this.children.keys()];
  }

  /** Whether stop() was called: exits from now on are expected. */
  get stopped(): boolean {
    return this.stopping;
  }

  isRetiring(handle: H): boolean {
    return this.children.get(handle)?.state === 'retiring';
  }

  /** Starts `count` children; resolves when all are ready, rejects as soon as one cannot be (none is restarted then). */
  start(count: number): Promise<R[]> {
    return Promise.all(Array.from({ length: count }, () => this.launch().ready));
  }

  /** Replaces a child that asked to retire: its successor starts first, and the old one is retired once it is ready. */
  recycle(handle: H): void {
    const child = this.children.get(handle);
    if (this.stopping || !child || child.state === 'retiring') return;
    child.state = 'retiring';
    this.launch().ready.then(
      () => {
        if (this.children.has(handle)) this.retireNow(child);
      },
      (err: Error) => {
        if (this.stopping) return;
        // The old one is gone too (it died while retiring): its place is filled as after an exit.
        if (!this.children.has(handle)) return this.restartAfter(err);
        child.state = 'ready';
        const delay = this.options.pace.firstDelayMs;
        this.options.events?.replaceFailed?.(handle, err, delay);
        this.later(delay, () => this.recycle(handle));
      },
    );
  }

  /** Starts `count` more children; one that cannot become ready is tried again, paced as after an exit. */
  grow(count: number): void {
    for (let i = 0; i < count; i++) if (!this.stopping) this.restart();
  }

  /** Retires a child with no successor (fewer are wanted): it finishes what it holds and exits. */
  retire(handle: H): void {
    const child = this.children.get(handle);
    if (this.stopping || !child || child.state === 'retiring') return;
    child.state = 'retiring';
    this.retireNow(child);
  }

  /** Sends `signal` to every child, SIGKILL to those still there after `hardStopMs`; resolves when all have exited. No restart follows. */
  async stop(signal: NodeJS.Signals, hardStopMs: number): Promise<void> {
    this.stopping = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const running = [...this.children.values()].map(({ process }) => process).filter((p) => p.exitCode === null && p.signalCode === null);
    const exits = running.map((process) => once(process, 'exit'));
    for (const process of running) process.kill(signal);
    const hardStop = setTimeout(() => running.forEach((process) => process.kill('SIGKILL')), hardStopMs);
    await Promise.all(exits);
    clearTimeout(hardStop);
  }

  private retireNow(child: Child<H>): void {
    (this.options.retire ?? ((_, process) => process.kill('SIGTERM')))(child.handle, child.process);
  }

  private launch(): Launched<H, R> {
    const launched = this.options.launch();
    const child: Child<H> = { handle: launched.handle, process: launched.process, state: 'starting' };
    this.children.set(launched.handle, child);
    launched.process.once('exit', (code, signal) => this.exited(child, signal ? `signal ${signal}` : `code ${code}`));
    launched.ready.then(
      () => {
        if (child.state === 'starting') child.state = 'ready';
      },
      () => {
        // Never started (spawn failed): no exit will come.
        if (child.process.pid === undefined) this.children.delete(child.handle);
        // Not ready and still running (it said why it cannot serve): it has no place here.
        else if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
      },
    );
    return launched;
  }

  private exited(child: Child<H>, how: ExitHow): void {
    this.children.delete(child.handle);
    this.options.events?.left?.(child.handle, how, child.state);
    // One that was never ready is reported by its ready promise; one retiring was replaced already.
    if (this.stopping || child.state !== 'ready') return;
    const delay = this.options.pace.readyExitsAtOnce ? 0 : this.pace.delayAfterExit();
    this.options.events?.exited?.(child.handle, how, delay);
    this.later(delay, () => this.restart());
  }

  /** Starts a replacement for one that exited, until one is ready. */
  private restart(): void {
    this.launch().ready.catch((err: Error) => {
      if (!this.stopping) this.restartAfter(err);
    });
  }

  /** A replacement could not become ready: another, paced as one more exit. */
  private restartAfter(err: Error): void {
    const delay = this.pace.delayAfterExit();
    this.options.events?.restartFailed?.(err, delay);
    this.later(delay, () => this.restart());
  }

  private later(delayMs: number, run: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.stopping) run();
    }, delayMs);
    this.timers.add(timer);
  }
}
