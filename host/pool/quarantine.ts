// Which controllers the pool stops running because they keep killing workers (docs/design.md §6.4): a controller
// with DEATHS deaths attributed to it within WITHIN_MS, or the only controller in flight at
// DEATHS deaths of no known cause within WITHIN_MS, is answered 503 without running until its file or an import
// changes (lift(): a worker's watcher matches the change against the hold's files) or FOR_MS pass. Pure: the pool
// (host/pool/quarantineNotices.ts) feeds it deaths and the time.

export const QUARANTINE_DEATHS = 3;
export const QUARANTINE_WITHIN_MS = 10_000;
export const QUARANTINE_FOR_MS = 30_000;

/** One worker's death as the pool saw it. */
export interface Death {
  /** The controller whose call ended it, when the cause is known. */
  controller: string | undefined;
  /** The controllers the pool saw running on it (a death with no known cause counts only when it is one). */
  inFlight: readonly string[];
  /** The attributed controller's file and imports, as the dying worker knew them. */
  files?: readonly string[];
}

/** A controller newly quarantined, and why. */
export interface Quarantined {
  controller: string;
  /** When it is let run again (ms, on the caller's clock), unless its files change first. */
  until: number;
  /** `attributed`: the deaths were its own calls'; `alone`: it was the only controller in flight at each. */
  reason: 'attributed' | 'alone';
  /** Its file and imports, when a death told them. */
  files?: readonly string[];
}

export class Quarantine {
  /** Recent deaths of each kind, by controller: their times. */
  private readonly attributed = new Map<string, number[]>();
  private readonly alone = new Map<string, number[]>();
  private readonly held = new Map<string, number>();
  /** Each controller's files, as its latest attributed death told them. */
  private readonly files = new Map<string, readonly string[]>();

  /** Counts a death at `now`; returns the controller it quarantines, if it does. */
  death(now: number, death: Death): Quarantined | undefined {
    const [controller, counts, reason] =
      death.controller !== undefined
        ? [death.controller, this.attributed, 'attributed' as const]
        : new Set(death.inFlight).size === 1
          ? [death.inFlight[0], this.alone, 'alone' as const]
          : [undefined, undefined, undefined];
    if (controller === undefined) return undefined;
    if (death.controller !== undefined && death.files) this.files.set(controller, death.files);
    const recent = (counts.get(controller) ?? []).filter((at) => now - at < QUARANTINE_WITHIN_MS);
    recent.push(now);
    counts.set(controller, recent);
    if (recent.length < QUARANTINE_DEATHS || this.until(controller, now) !== undefined) return undefined;
    const until = now + QUARANTINE_FOR_MS;
    this.held.set(controller, until);
    const files = this.files.get(controller);
    return files ? { controller, until, reason, files } : { controller, until, reason };
  }

  /** Until when `controller` is held at `now`, or undefined when it runs. */
  until(controller: string, now: number): number | undefined {
    const until = this.held.get(controller);
    if (until === undefined) return undefined;
    if (now < until) return until;
    this.forget(controller);
    return undefined;
  }

  /** Every controller held at `now`, with its end (for a worker that starts). */
  active(now: number): { controller: string; until: number; files?: readonly string[] }[] {
    return [...this.held.keys()].flatMap((controller) => {
      const until = this.until(controller, now);
      const files = this.files.get(controller);
      return until === undefined ? [] : [files ? { controller, until, files } : { controller, until }];
    });
  }

  /** Its files changed: it runs again, and its past deaths no longer count. True when it was held. */
  lift(controller: string): boolean {
    const held = this.held.has(controller);
    this.forget(controller);
    return held;
  }

  private forget(controller: string): void {
    this.held.delete(controller);
    this.attributed.delete(controller);
    this.alone.delete(controller);
    this.files.delete(controller);
  }
}
