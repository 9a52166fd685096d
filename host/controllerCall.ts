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
}

const calls = new AsyncLocalStorage<ControllerCall>();

/** Runs the handler as `call`. */
export function runControllerCall<T>(call: ControllerCall, handler: () => T | Promise<T>): Promise<T> {
  return calls.run(call, async () => handler());
}

/** The call running in this async context, if any. */
export function currentCall(): ControllerCall | undefined {
  return calls.getStore();
}
