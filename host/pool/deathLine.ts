// The line for a worker that died unasked: its cause, the request it is attributed to, and what became of each
// request the primary relayed to it and, when the worker listed them before it went (a death of known cause), each
// a proxy sent it directly; otherwise each proxy's error.log names those. Pure.
import { sendAgainAfterLoss, type WorkerEnd } from '../../common/workerLoss.ts';
import type { DeathCause } from '../wire/poolMessages.ts';
import { routeController } from '../controller/controllerRoute.ts';
import type { Relayed } from './dispatcher.ts';

/** What an exit with no known cause most likely was, for the death line. */
export function unknownCause(how: string): string {
  if (how === 'signal SIGKILL') return 'no known cause: a kill from outside, or the kernel out of memory';
  if (how === 'signal SIGABRT' || how === 'code 134') return 'no known cause: an abort, such as V8 out of heap memory';
  if (how.startsWith('signal ')) return 'no known cause: a native crash, or a signal from outside';
  return 'no known cause';
}

export interface Death {
  pid: number | undefined;
  /** `code 1`, `signal SIGKILL` */
  how: string;
  /** Before its replacement starts, ms. */
  delay: number;
  cause: DeathCause | undefined;
  /** What the primary was relaying to it. */
  relayed: Relayed[];
  /** While blocked: the request ids of the calls it ran. */
  blocked: string[];
}

export function deathLine({ pid, how, delay, cause, relayed, blocked }: Death): string {
  const end: WorkerEnd = { died: true, culprit: cause?.requestId };
  const fate = (requestId: string | undefined, resendable: boolean) =>
    sendAgainAfterLoss({ requestId: requestId ?? '', resendable, resent: false, sentMs: 0 }, end) ? 'sent again' : 'failed';
  const outcomes = relayed.map(
    ({ label, requestId, resendable }) => `${label} (${requestId ? `req ${requestId}, ` : ''}${fate(requestId, resendable)})`,
  );
  // What a proxy sent it directly, as the worker listed it before it went (known causes only): the culprit is named above.
  const relayedIds = new Set(relayed.map(({ requestId }) => requestId));
  const direct = cause?.running?.filter(({ requestId }) => requestId !== cause.requestId && !relayedIds.has(requestId));
  const ran = [
    outcomes.length > 0 ? `It was relaying ${outcomes.join(', ')}` : 'It was relaying nothing',
    ...(blocked.length > 0 ? [`blocked, it was running requests ${blocked.join(', ')}`] : []),
  ].join('; ');
  const why = cause ? `${cause.cause}, in request ${cause.requestId}, which is not sent again` : unknownCause(how);
  const fromProxies = direct
    ? direct.length > 0
      ? `it ran from a proxy ${direct.map(({ requestId, what, resendable }) => `${what} (req ${requestId}, ${fate(requestId, resendable) === 'sent again' ? 'sent again by its proxy' : 'failed'})`).join(', ')}`
      : 'it ran nothing else from a proxy'
    : // Not listed when the worker could not say (a kill from outside, the kernel): each proxy's error.log names them.
      'a proxy sends each other GET or HEAD without a body that it had sent there to another worker once';
  return `Worker ${pid} exited with ${how}; starting a new one${delay ? ` in ${delay} ms` : ''}. Cause: ${why}. ${ran}; ${fromProxies}`;
}

/** The controllers of the requests relayed to a worker when it died (its quarantine counts them). */
export function controllersRelayed(relayed: Relayed[]): string[] {
  return relayed.flatMap(({ label }) => {
    const route = routeController(label.slice(label.indexOf(' ') + 1));
    return route.kind === 'controller' ? [route.name] : [];
  });
}
