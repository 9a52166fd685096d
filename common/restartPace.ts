// How a primary (the host pool, the proxy with --proxy-workers) paces the replacement of workers that
// die: at once, unless more than twice its workers died within the last CRASH_WINDOW_MS; then after
// RESTART_DELAY_MS, so a worker that dies at start cannot spin the primary.
const CRASH_WINDOW_MS = 10_000;
export const RESTART_DELAY_MS = 1_000;

export class RestartPace {
  private readonly exits: number[] = [];

  constructor(private readonly workers: number) {}

  /** Records an unexpected exit; the wait before its replacement starts, in ms. */
  delayAfterExit(now = Date.now()): number {
    this.exits.push(now);
    while (this.exits.length > 0 && this.exits[0] < now - CRASH_WINDOW_MS) this.exits.shift();
    return this.exits.length > this.workers * 2 ? RESTART_DELAY_MS : 0;
  }
}
