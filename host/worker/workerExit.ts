// process.exit() in a controller's code (a request's or its module body's) throws ControllerExit: it ends that
// request or load, never the worker. A worker that exits while controllers run (process.exit() outside any
// controller's code, a fatal error) says which calls it took down, as its last act. The primary will not see every request (the proxy
// may reach a worker's socket directly), so the worker writes the line itself, synchronously: no IPC runs in
// an 'exit' listener. It goes down the pipe its watchdog thread writes host.log events on, which the primary reads.
import { writeSync } from 'node:fs';
import { callsInFlight, currentCall, isLoadingController, type ControllerCall } from '../controller/controllerCall.ts';
import { ControllerExit } from '../controller/errors.ts';
import type { WireHostEntry } from '../wire/poolMessages.ts';

/** Why the process is exiting, as far as it could be seen before the 'exit' event. */
export interface ExitCause {
  /** The uncaught exception or rejection that ends it, if any. */
  uncaught?: { error: unknown; origin: NodeJS.UncaughtExceptionOrigin };
  /** process.exit()'s code, called outside any controller's code. */
  exitCalled?: { code: string | number | null | undefined };
}

/** The line for one call the exit took down. */
export function exitLine(call: { controller: string; file: string; what: string }, cause: ExitCause, pid: number, code: number): string {
  const how = cause.uncaught
    ? `an ${cause.uncaught.origin === 'unhandledRejection' ? 'unhandled rejection' : 'uncaught exception'}: ${describe(cause.uncaught.error)}`
    : cause.exitCalled
      ? `process.exit(${cause.exitCalled.code ?? ''}) called outside any controller call`
      : `its exit with code ${code}`;
  return `Worker ${pid} exited while running controller ${call.controller} (${call.file}) in ${call.what}: ended by ${how}`;
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
}

/**
 * From now on, an exit of this process writes one host.log event per call in flight to `logFd`, and process.exit() in
 * a controller's code throws; `exitAfterReturn` hears of one from a call whose handler had returned (in its body's
 * code or a callback), which no catch of the call's (host/worker/app.ts) sees.
 */
export function reportExitsDuringCalls(logFd: number, exitAfterReturn: (call: ControllerCall, exit: ControllerExit) => void): void {
  const cause: ExitCause = {};
  process.on('uncaughtExceptionMonitor', (error, origin) => {
    if (!(error instanceof ControllerExit)) cause.uncaught ??= { error, origin };
  });
  const exit = process.exit.bind(process);
  process.exit = function exitUnlessCalledByAController(code?: string | number | null): never {
    // Thrown on the controller's own stack, so it unwinds that call alone (host/worker/app.ts answers it).
    const call = currentCall();
    if (call === undefined && !isLoadingController()) {
      cause.exitCalled ??= { code };
      return exit(code);
    }
    const thrown = new ControllerExit(code);
    if (call && !callsInFlight().has(call)) exitAfterReturn(call, thrown);
    throw thrown;
  };
  process.on('exit', (code) => {
    for (const call of callsInFlight()) {
      const entry: WireHostEntry = {
        level: 'error',
        requestId: call.requestId,
        message: call.mapStack(exitLine(call, cause, process.pid, code)),
        time: Date.now(),
        pid: process.pid,
      };
      try {
        writeSync(logFd, `${JSON.stringify(entry)}\n`);
      } catch {
        // The primary is gone: nobody is left to tell.
      }
    }
  });
}
