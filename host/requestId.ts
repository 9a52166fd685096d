// The id of a request as the host logs it: the proxy's X-Request-Id when well-formed, else none (the
// primary's own lines) or a new one (a request a controller or the missing-controller answer logs).
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { WELL_FORMED_REQUEST_ID } from '../common/protocol.ts';

export function requestIdOf(headers: IncomingHttpHeaders): string | undefined {
  const id = headers['x-request-id'];
  return typeof id === 'string' && WELL_FORMED_REQUEST_ID.test(id) ? id : undefined;
}

export function requestIdOrNew(headers: IncomingHttpHeaders): string {
  return requestIdOf(headers) ?? randomUUID();
}
