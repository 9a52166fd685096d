// The relay's refusals and waits (host/pool/dispatcher.ts's events), each a host.log line naming the request.
import { requestIdOf } from '../../common/requestId.ts';
import type { HostLog } from '../wire/hostLog.ts';
import { SPOOL_RETRY_AFTER_S, type DispatcherEvents } from './dispatcher.ts';

/** The relay's refusals and waits, each a host.log line naming the request. */
export function relayLines(
  log: HostLog,
): Pick<DispatcherEvents, 'spoolFailed' | 'spoolTooLarge' | 'spoolFull' | 'queueFull' | 'leftQueue'> {
  return {
    spoolFailed(req, err) {
      log.error(`Could not keep the body of ${req.method} ${req.url} until a worker takes it: ${err.message}`, requestIdOf(req.headers));
    },
    spoolTooLarge(req, length, bound) {
      log.warn(
        `Refused ${req.method} ${req.url}: its Content-Length of ${length} bytes is larger than --spool-max-size (${bound}); answered 413`,
        requestIdOf(req.headers),
      );
    },
    spoolFull(req, bound) {
      log.error(
        `Refused ${req.method} ${req.url}: the bodies waiting for a worker reached --spool-max-size (${bound}) while it arrived; its file deleted, answered 503 (Retry-After ${SPOOL_RETRY_AFTER_S}), its connection closed`,
        requestIdOf(req.headers),
      );
    },
    queueFull(req, bound) {
      log.error(
        `Refused ${req.method} ${req.url}: every worker is busy and ${bound} requests wait already (--listen-backlog); answered 503`,
        requestIdOf(req.headers),
      );
    },
    leftQueue(req, waitedMs, running) {
      log.warn(
        `${req.method} ${req.url} left the listen queue after ${Math.round(waitedMs)} ms without a worker: every worker was busy running ${running.join(', ') || 'nothing'}`,
        requestIdOf(req.headers),
      );
    },
  };
}
