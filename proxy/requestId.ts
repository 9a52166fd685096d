// The id that ties a request's access-log, error-log and host-log lines together. A well-formed
// incoming X-Request-Id is kept (a front load balancer may have set it); anything else is replaced.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { WELL_FORMED_REQUEST_ID } from '../common/protocol.ts';

export function requestIdOf(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && WELL_FORMED_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}
