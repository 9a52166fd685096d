// A worker's side of the pool's quarantine (host/pool/quarantine.ts decides): the controllers it answers 503 with
// Retry-After without running, until the hold ends or their files change. A worker that never loaded a held
// controller does not know its imports, so any local module's change lifts every hold.
import type { QuarantineHold } from '../wire/poolMessages.ts';

export class QuarantineGate {
  private readonly held = new Map<string, number>();

  constructor(holds: readonly QuarantineHold[] = []) {
    for (const hold of holds) this.hold(hold);
  }

  hold({ controller, until }: QuarantineHold): void {
    this.held.set(controller, until);
  }

  lift(controller: string): void {
    this.held.delete(controller);
  }

  /** The seconds `controller` is still held at `now` (ms since the epoch), at least 1; undefined when it runs. */
  retryAfter(controller: string, now: number): number | undefined {
    if (this.held.size === 0) return undefined;
    const until = this.held.get(controller);
    if (until === undefined) return undefined;
    if (now >= until) {
      this.held.delete(controller);
      return undefined;
    }
    return Math.max(1, Math.ceil((until - now) / 1000));
  }

  /** A file changed (a controller's, by name; a local module's, undefined): the holds it lifts. */
  changed(name: string | undefined): string[] {
    const lifted = name === undefined ? [...this.held.keys()] : this.held.has(name) ? [name] : [];
    for (const controller of lifted) this.held.delete(controller);
    return lifted;
  }
}
