// Which worker takes the next request, whether it waits, or is refused: Phusion Passenger's router
// (Group::route): the worker with the fewest requests in flight, among those that take requests, are not
// blocked and are below the concurrency limit; when none is, the request waits in one FIFO queue bounded by
// --listen-backlog, and is refused past it. The host primary (host/pool/dispatcher.ts) and the proxy
// (proxy/forward/workerRoutes.ts) both route with it; neither does I/O here.

export interface RouteCandidate {
  /** Requests sent to it and not yet ended. */
  inFlight: number;
  /** Its event loop has not turned for a while: it takes nothing until it does. */
  blocked: boolean;
  /** False once it retires or stops. */
  accepting: boolean;
}

export type RouteDecision<T> = { send: T } | { wait: true } | { refuse: true };

/** The least busy worker that can take one more request now, or undefined. Ties go to the first listed. */
export function leastBusy<T extends RouteCandidate>(workers: readonly T[], concurrency: number): T | undefined {
  let best: T | undefined;
  for (const worker of workers) {
    if (!worker.accepting || worker.blocked) continue;
    if (concurrency > 0 && worker.inFlight >= concurrency) continue;
    if (!best || worker.inFlight < best.inFlight) best = worker;
    if (best.inFlight === 0) break;
  }
  return best;
}

/**
 * Where a new request goes. Requests already waiting go first (the queue is FIFO): a new one joins them even
 * when a worker has room, which only happens in the moment before that worker takes the queue's head.
 */
export function route<T extends RouteCandidate>(
  workers: readonly T[],
  concurrency: number,
  queued: number,
  bound: number,
): RouteDecision<T> {
  const worker = queued === 0 ? leastBusy(workers, concurrency) : undefined;
  if (worker) return { send: worker };
  return queued < bound ? { wait: true } : { refuse: true };
}
