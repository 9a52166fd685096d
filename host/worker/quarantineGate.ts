// A worker's side of the pool's quarantine (host/pool/quarantine.ts decides): the controllers it answers 503 with
// Retry-After without running, until the hold ends or their files change: its own file, or a local module among the
// files the worker it killed knew it by (QuarantineHold.files). A hold whose files are unknown (a death of no known
// cause blamed it) is lifted by any local module's change.
import type { QuarantineHold } from '../wire/poolMessages.ts';

export class QuarantineGate {
  private readonly held = new Map<string, number>();
  private readonly files = new Map<string, readonly string[]>();

  constructor(holds: readonly QuarantineHold[] = []) {
    for (const hold of holds) this.hold(hold);
  }

  hold({ controller, until, files }: QuarantineHold): void {
    this.held.set(controller, until);
    if (files) this.files.set(controller, files);
    else this.files.delete(controller);
  }

  lift(controller: string): void {
    this.held.delete(controller);
    this.files.delete(controller);
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

  /** `file` changed (controller `name`'s own, or a local module's when `name` is undefined): the holds it lifts. */
  changed(name: string | undefined, file: string): string[] {
    const held = [...this.held.keys()];
    const lifted =
      name !== undefined
        ? held.filter((controller) => controller === name)
        : held.filter((controller) => this.files.get(controller)?.includes(file) ?? true);
    for (const controller of lifted) this.lift(controller);
    return lifted;
  }
}
