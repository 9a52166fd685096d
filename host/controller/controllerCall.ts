// The controller call that is running, for code that is not handed the request: a controller's console
// output (consoleCapture.ts) is tagged with the request id and controller name of the call it came from,
// found through AsyncLocalStorage, which follows the call into its awaits, timers and callbacks.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface ControllerCall {
  requestId: string;
  /** The controller's name, `Latest` for www/controllers/Latest.ts. */
  controller: string;
  /** Maps a stack's `file:line:column` to the controller's source (host/controller/compile.ts). */
  mapStack: (stack: string) => string;
  /** Its file, and `<METHOD> <url>`: what a line about it names. */
  file: string;
  what: string;
  /** The controller's file and the local modules bundled with it (`extqs dev`'s page lists their type errors). */
  files: readonly string[];
}

const calls = new AsyncLocalStorage<ControllerCall>();
/** The calls whose handler runs now: what a worker that exits was running (workerExit.ts). */
const inFlight = new Set<ControllerCall>();
/** How to end the wait on each call whose handler returned a promise not yet settled (endPendingCall). */
const awaiting = new Map<ControllerCall, (error: unknown) => void>();
/** Above zero while a controller's module body runs (compile.ts): its process.exit() is a load failure. */
let loading = 0;

/** What a failed call threw, kept while the request lives (for `extqs dev`'s error page). */
export interface CallFailure {
  call: ControllerCall;
  error: unknown;
  /** `load`: the controller could not become a handler (its message holds the mapped stack); `run`: the handler threw. */
  stage: 'load' | 'run';
}

const failures = new WeakMap<object, CallFailure>();

/**
 * Runs the handler as `call`; when it throws or rejects, the failure is kept under `request`, then rethrown. What
 * a handler returns at once is returned at once, without a promise: on Node 20 every promise runs the hooks that
 * AsyncLocalStorage needs, a few hundred nanoseconds each (docs/benchmarks.md, "The whole stack").
 */
export function runControllerCall<T>(call: ControllerCall, request: object, handler: () => T): Awaited<T> | Promise<Awaited<T>> {
  inFlight.add(call);
  let result: T;
  try {
    result = calls.run(call, handler);
    if (isThenable(result)) return settle<T>(call, request, result);
  } catch (err) {
    inFlight.delete(call);
    failures.set(request, { call, error: err, stage: 'run' });
    throw err;
  }
  inFlight.delete(call);
  return result as Awaited<T>;
}

/** What `await` would wait on: an object or function with a `then` method. */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}

async function settle<T>(call: ControllerCall, request: object, pending: PromiseLike<unknown>): Promise<Awaited<T>> {
  try {
    // Raced with endPendingCall(): a fault of the call in a callback of its own settles nothing of its promise.
    return await new Promise<Awaited<T>>((resolve, reject) => {
      awaiting.set(call, reject);
      pending.then(resolve as (value: unknown) => void, reject);
    });
  } catch (err) {
    failures.set(request, { call, error: err, stage: 'run' });
    throw err;
  } finally {
    inFlight.delete(call);
    awaiting.delete(call);
  }
}

/**
 * Ends the wait on `call`'s handler with `error`, as if its promise had rejected with it, if it is still waited
 * on; the handler's code goes on, unheard. False when the call has already returned (or never returned a promise).
 */
export function endPendingCall(call: ControllerCall, error: unknown): boolean {
  const end = awaiting.get(call);
  if (!end) return false;
  end(error);
  return true;
}

/**
 * Runs a controller's module body (its top-level code) outside any request's context: a timer or promise it
 * starts belongs to no request, whichever request caused the load.
 */
export function loadOutsideAnyCall<T>(load: () => T): T {
  loading += 1;
  try {
    return calls.exit(load);
  } finally {
    loading -= 1;
  }
}

/** Whether a controller's module body is running now (on this stack). */
export function isLoadingController(): boolean {
  return loading > 0;
}

/**
 * Runs `send` as `call` again: a Response's body is pulled after its handler returned, and is still the controller's
 * code (its process.exit() ends that body, its console lines carry its request).
 */
export function continueCall<T>(call: ControllerCall, send: () => T): T {
  return calls.run(call, send);
}

/** The calls whose handler has not returned yet. */
export function callsInFlight(): ReadonlySet<ControllerCall> {
  return inFlight;
}

/** Keeps why the controller for `request` could not be loaded, as a failed call's error is kept. */
export function keepLoadFailure(request: object, call: ControllerCall, error: unknown): void {
  failures.set(request, { call, error, stage: 'load' });
}

/** The call running in this async context, if any. */
export function currentCall(): ControllerCall | undefined {
  return calls.getStore();
}

/** What the controller called for `request` threw, if it did. */
export function failureOf(request: object): CallFailure | undefined {
  return failures.get(request);
}
