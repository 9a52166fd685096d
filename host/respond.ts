// Sends what a controller returned (DESIGN.md §5): a Response as it is, a string as text/html (PHP's
// echo), anything else as JSON.
import type { FastifyReply } from 'fastify';

export async function sendResult(reply: FastifyReply, result: unknown): Promise<FastifyReply> {
  if (result instanceof Response) {
    reply.code(result.status);
    result.headers.forEach((value, key) => {
      reply.header(key, value);
    });
    return reply.send(Buffer.from(await result.arrayBuffer()));
  }
  if (result === undefined || result === null) {
    return reply.type('text/html; charset=UTF-8').send('');
  }
  if (typeof result === 'string' || typeof result === 'number' || typeof result === 'boolean' || typeof result === 'bigint') {
    return reply.type('text/html; charset=UTF-8').send(String(result));
  }
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(result));
}
