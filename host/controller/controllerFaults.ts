// A controller's failure that no code of its own caught, a forgotten rejection or a throw in one of its callbacks,
// costs its own request, never its neighbours on the worker (docs/design.md §6.2). Node runs these handlers in
// the async context of the failing code, so AsyncLocalStorage names the request that started it (deferred
// promises: the one that created them): its call, if still awaited, is answered 500 with PHP's fatal line; an
// answer already given stands, as PHP's warning did not change the page. After an uncaught exception the worker
// retires: Node holds a process unsafe to resume once a stack was cut half-way (the "Warning: Using
// 'uncaughtException' correctly" section of its process docs); a rejection cut no stack, and it keeps serving.
import { currentCall, endPendingCall, type ControllerCall } from './controllerCall.ts';
import { ControllerExit, ControllerFault } from './errors.ts';
import type { HostLog } from '../wire/hostLog.ts';
import type { WorkerStats } from '../wire/stats.ts';

export interface FaultConsequences {
  log: HostLog;
  stats: WorkerStats;
  /** Asks the pool for a replacement; this worker takes no new request meanwhile. */
  retire: (reason: string) => void;
}

/** Installs the worker's handlers, before any controller loads, so a controller's own come after them. */
export function containControllerFaults({ log, stats, retire }: FaultConsequences): void {
  const fault = (kind: ControllerFault['kind'], error: unknown) => {
    const call = currentCall();
    if (error instanceof ControllerExit) return exitedLate(call, error);
    // The request's own catch (host/worker/app.ts) logs, counts and answers it.
    if (call && endPendingCall(call, new ControllerFault(kind, { cause: error }))) return;
    if (!call) {
      log.error(`${kind} outside any controller request in worker ${process.pid}: ${describe(error, (stack) => stack)}`);
      return;
    }
    stats.controller(call.controller).errors += 1;
    log.error(
      `${kind} in controller ${call.controller} (${call.file}) in ${call.what}, after its answer was given (it stands): ${describe(error, call.mapStack)}`,
      call.requestId,
    );
  };

  process.on('unhandledRejection', (reason) => fault('Unhandled rejection', reason));
  const uncaught = (error: unknown) => {
    fault('Uncaught exception', error);
    if (error instanceof ControllerExit) return;
    const call = currentCall();
    retire(
      `an uncaught exception ${call ? `in controller ${call.controller}, request ${call.requestId}` : 'outside any controller request'}`,
    );
  };
  process.on('uncaughtException', uncaught);

  // A capture callback replaces the 'uncaughtException' event (Node's process docs): the host's handling runs first.
  const setCapture = process.setUncaughtExceptionCaptureCallback.bind(process);
  process.setUncaughtExceptionCaptureCallback = function captureAfterTheHost(capture: ((error: Error) => void) | null) {
    setCapture(
      capture &&
        ((error: Error) => {
          uncaught(error);
          capture(error);
        }),
    );
  };

  /**
   * process.exit() in a callback of a controller's, not on its call's own stack: it ends the call if still awaited;
   * after the handler returned, host/worker/workerExit.ts has said so.
   */
  function exitedLate(call: ControllerCall | undefined, exit: ControllerExit): void {
    if (call) endPendingCall(call, exit);
    else log.info(`${exit.message} in a controller's code outside any request in worker ${process.pid}: nothing to end`);
  }
}

function describe(error: unknown, mapStack: (stack: string) => string): string {
  return error instanceof Error ? mapStack(error.stack ?? `${error.name}: ${error.message}`) : String(error);
}
