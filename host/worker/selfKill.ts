// A controller that ends its own worker (`process.kill(process.pid, …)` with a signal that kills, `process.abort()`)
// says so first, synchronously, down the watchdog's pipe (poolMessages.ts DeathCause): the pool then never sends
// that request again and counts the death towards the controller's quarantine. The worker then dies as asked.
import { constants } from 'node:os';
import { writeSync } from 'node:fs';
import { currentCall } from '../controller/controllerCall.ts';
import type { DeathCause, WatchdogLine } from '../wire/poolMessages.ts';
import type { RunningCalls } from './runningCalls.ts';

/** Signals whose default action does not end a process (ignored, or a stop a SIGCONT undoes). */
const NOT_ENDING = new Set(['SIGCHLD', 'SIGCONT', 'SIGURG', 'SIGWINCH', 'SIGSTOP', 'SIGTSTP', 'SIGTTIN', 'SIGTTOU']);

/** The signal's name, or undefined for 0 (a check that the process exists) and what Node would refuse. */
function signalName(signal: string | number | undefined): string | undefined {
  if (signal === undefined) return 'SIGTERM';
  if (typeof signal === 'string') return signal in constants.signals ? signal : undefined;
  return Object.entries(constants.signals).find(([, number]) => number === signal)?.[0];
}

/** True when `process.kill(pid, signal)` ends this process: its own pid, a signal that ends it, no listener of its own. */
export function killsItself(
  pid: number,
  signal: string | number | undefined,
  ownPid: number,
  listeners: (name: string) => number,
): boolean {
  const name = signalName(signal);
  return Number(pid) === ownPid && name !== undefined && !NOT_ENDING.has(name) && (name === 'SIGKILL' || listeners(name) === 0);
}

/** Writes `cause` where the primary reads it; nothing when the primary is gone. */
export function sayDeath(logFd: number, cause: DeathCause): void {
  try {
    writeSync(logFd, `${JSON.stringify({ death: cause } satisfies WatchdogLine)}\n`);
  } catch {
    // Nobody is left to tell.
  }
}

/** From now on a controller call that kills or aborts this process says so on `logFd` first, with what `running` holds. */
export function reportSelfKills(logFd: number, running: RunningCalls): void {
  const kill = process.kill.bind(process);
  process.kill = function killNamingItsCaller(pid: number, signal?: string | number): true {
    const call = currentCall();
    if (call && killsItself(pid, signal, process.pid, (name) => process.listenerCount(name)))
      sayDeath(logFd, {
        requestId: call.requestId,
        controller: call.controller,
        cause: `process.kill(process.pid, ${JSON.stringify(signal ?? 'SIGTERM')}) called by controller ${call.controller}`,
        files: call.files,
        running: running.list(),
      });
    return kill(pid, signal);
  };
  const abort = process.abort.bind(process);
  process.abort = function abortNamingItsCaller(): never {
    const call = currentCall();
    if (call)
      sayDeath(logFd, {
        requestId: call.requestId,
        controller: call.controller,
        cause: `process.abort() called by controller ${call.controller}`,
        files: call.files,
        running: running.list(),
      });
    return abort();
  };
}
