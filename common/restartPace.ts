// How a supervisor (common/supervisor.ts) paces the replacement of children that die: the first
// `freeExits` exits within `windowMs` of one another are replaced at once; past them the replacement
// waits `firstDelayMs`, doubling with each further exit up to `maxDelayMs`, so a child that dies at start
// cannot spin its parent. An exit with no other within the window starts afresh. With `readyExitsAtOnce`
// only children that could not start are paced: one that was ready and died is replaced at once.

export interface PacePolicy {
  freeExits: number;
  windowMs: number;
  firstDelayMs: number;
  maxDelayMs: number;
  /**
   * A child that was ready and then died is replaced at once and not counted (php-fpm forks a replacement for a
   * child that died): pacing is for a child that cannot start, and waiting would hold every request back.
   */
  readyExitsAtOnce?: boolean;
}

const CRASH_WINDOW_MS = 10_000;

/** The launcher's one child of a role: 100 ms, doubling to 5 s; healthy again after 10 s without an exit. */
export const LAUNCHER_PACE: PacePolicy = { freeExits: 0, windowMs: CRASH_WINDOW_MS, firstDelayMs: 100, maxDelayMs: 5_000 };

/** A primary's N workers: at once, unless more than 2×N died within 10 s; then 1 s. */
export function poolPace(workers: number, readyExitsAtOnce = false): PacePolicy {
  return { freeExits: workers * 2, windowMs: CRASH_WINDOW_MS, firstDelayMs: 1_000, maxDelayMs: 1_000, readyExitsAtOnce };
}

export class RestartPace {
  private readonly exits: number[] = [];
  private lastDelay = 0;

  constructor(private readonly policy: PacePolicy) {}

  /** Records an unexpected exit; the wait before its replacement starts, in ms. */
  delayAfterExit(now = Date.now()): number {
    const { freeExits, windowMs, firstDelayMs, maxDelayMs } = this.policy;
    this.exits.push(now);
    while (this.exits[0] < now - windowMs) this.exits.shift();
    const over = this.exits.length - freeExits;
    this.lastDelay = over <= 0 ? 0 : over === 1 ? firstDelayMs : Math.min(Math.max(this.lastDelay * 2, firstDelayMs), maxDelayMs);
    return this.lastDelay;
  }
}
