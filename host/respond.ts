// Sends what a controller returned (docs/design.md §5): a Response as it is (its body streamed), a string as
// text/html (PHP's echo), anything else as JSON.
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { CONTROLLER_ANSWER_FIELD, CONTROLLER_FAILED_FIELD, ENDED_WITHOUT_HEADERS_FIELD, HOST_STDERR_FIELD } from '../common/protocol.ts';

/** The host's own signals to the proxy: never a controller's to send. */
const HOST_SIGNALS: readonly string[] = [HOST_STDERR_FIELD, ENDED_WITHOUT_HEADERS_FIELD, CONTROLLER_ANSWER_FIELD, CONTROLLER_FAILED_FIELD];

export function sendResult(reply: FastifyReply, result: unknown): FastifyReply {
  if (result instanceof Response) {
    reply.code(result.status);
    result.headers.forEach((value, key) => {
      if (!HOST_SIGNALS.includes(key)) reply.header(key, value);
    });
    // A controller's error status is its answer, which the proxy relays (not the host's own, common/protocol.ts).
    if (result.status >= 400) reply.header(CONTROLLER_ANSWER_FIELD, '1');
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
