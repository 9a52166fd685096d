// The controller requests a worker is running, from the handler's start to its end (the answer may
// have gone long before: a controller that ignored its abort signal still runs). The pool sends a
// worker nothing new until this is zero (host/pool/dispatcher.ts), as php-fpm counts a child busy.
export class RunningCalls {
  private count = 0;
  private waiters: (() => void)[] = [];

  begin(): void {
    this.count += 1;
  }

  end(): void {
    this.count -= 1;
    if (this.count > 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Resolves once no request runs. */
  whenNone(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
