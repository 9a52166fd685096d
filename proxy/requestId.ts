// The id that ties a request's access-log, error-log and host-log lines together. A well-formed
// incoming X-Request-Id is kept (a front load balancer may have set it); anything else is replaced.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && WELL_FORMED.test(incoming) ? incoming : randomUUID();
}
