import type { PoolFields } from '../../host/wire/stats.ts';

/** The pool fields of a static pool at rest, for unit tests of the status summary. */
export const NO_POOL: PoolFields = {
  processManager: 'static',
  processManagerSettings: '--workers 1 --pm "static" --listen-backlog 511',
  workerConcurrency: 0,
  listenQueue: 0,
  maxListenQueue: 0,
  listenQueueLen: 511,
  idleProcesses: 0,
  activeProcesses: 0,
  blockedProcesses: 0,
  requestsInFlight: 0,
  totalProcesses: 0,
  maxActiveProcesses: 0,
  maxChildrenReached: 0,
};
