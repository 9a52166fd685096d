// The controller call that is running, for code that is not handed the request: a controller's console
// output (consoleCapture.ts) is tagged with the request id and controller name of the call it came from,
// found through AsyncLocalStorage, which follows the call into its awaits, timers and callbacks.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface ControllerCall {
  requestId: string;
  /** The controller's name, `Latest` for www/controllers/Latest.ts. */
  controller: string;
  /** Maps a stack's `file:line:column` to the controller's source (host/compile.ts). */
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
    if (isThenable(result)) return settle(call, request, result);
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

async function settle<T>(call: ControllerCall, request: object, pending: T): Promise<Awaited<T>> {
  try {
    return await pending;
  } catch (err) {
    failures.set(request, { call, error: err, stage: 'run' });
    throw err;
  } finally {
    inFlight.delete(call);
  }
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
