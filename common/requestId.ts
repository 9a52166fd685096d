// The id that ties a request's access-log, error-log and host-log lines together. A well-formed incoming
// X-Request-Id is kept (a front load balancer may have set it, and the proxy always sets one for the host);
// anything else is replaced by a new one, or is none for a line that is not about a request of its own.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { WELL_FORMED_REQUEST_ID } from './protocol.ts';

/** The incoming X-Request-Id when well-formed, else undefined. */
export function requestIdOf(headers: IncomingHttpHeaders): string | undefined {
  const id = headers['x-request-id'];
  return typeof id === 'string' && WELL_FORMED_REQUEST_ID.test(id) ? id : undefined;
}

/** The incoming X-Request-Id when well-formed, else a new one. */
export function requestIdOrNew(headers: IncomingHttpHeaders): string {
  return requestIdOf(headers) ?? randomUUID();
}
