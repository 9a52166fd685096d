// Whether a request whose worker's connection failed before an answer goes once more, to another worker
// (docs/design.md §6.4). Pure: the proxy (proxy/forward/forwardingCore.ts) and the host's primary
// (host/pool/dispatcher.ts) ask it with what they know of the worker's fate.

/** What became of the worker, as its host's table (or the primary's own exit handling) said within the wait. */
export type WorkerEnd =
  /** It died: `culprit` is the request whose controller ended it, when the cause is known. */
  | { died: true; culprit: string | undefined }
  /** It retires: it closed a kept-alive connection a request had just been sent on. */
  | { died: false }
  /** Nothing within the wait: it cut the request itself (an execution-time drop), and lives on. */
  | undefined;

export interface LostRequest {
  requestId: string;
  /** A GET or HEAD without a body, whose client is still there and got no head yet: nothing of it was consumed. */
  resendable: boolean;
  /** Already sent again once after a worker's loss: a second loss fails it (a request that kills whatever runs it). */
  resent: boolean;
  /** How long before the failure it was sent. */
  sentMs: number;
}

/** A request that failed this soon after it was sent to a retiring worker never reached a controller. */
export const JUST_SENT_MS = 1_000;

/** True when `request` is to be sent again: never the request that caused its worker's death, each other one at most once. */
export function sendAgainAfterLoss(request: LostRequest, end: WorkerEnd): boolean {
  if (!request.resendable || request.resent || end === undefined) return false;
  if (end.died) return end.culprit !== request.requestId;
  return request.sentMs < JUST_SENT_MS;
}
