// Sends what a controller returned (docs/design.md §5): a Response as it is (its body streamed), a string as
// text/html (PHP's echo), anything else as JSON.
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { ENDED_WITHOUT_HEADERS_FIELD, HOST_STDERR_FIELD } from '../common/protocol.ts';

export function sendResult(reply: FastifyReply, result: unknown): FastifyReply {
  if (result instanceof Response) {
    reply.code(result.status);
    result.headers.forEach((value, key) => {
      // The host's own signals to the proxy are never a controller's to send.
      if (key !== HOST_STDERR_FIELD && key !== ENDED_WITHOUT_HEADERS_FIELD) reply.header(key, value);
    });
    return reply.send(result.body ? Readable.fromWeb(result.body) : '');
  }
  if (result === undefined || result === null) {
    return reply.type('text/html; charset=UTF-8').send('');
  }
  if (typeof result === 'string' || typeof result === 'number' || typeof result === 'boolean' || typeof result === 'bigint') {
    return reply.type('text/html; charset=UTF-8').send(String(result));
  }
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(result));
}
