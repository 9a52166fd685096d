// Sends what a controller returned (docs/design.md §6.1): a Response as it is (its body streamed), a string as
// text/html (PHP's echo), anything else as JSON. A streamed body that fails once its answer has begun ends
// with the fatal error in a trailer (common/protocol.ts): the head is gone, and the proxy relays it.
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import {
  CONTROLLER_ANSWER_FIELD,
  CONTROLLER_HEAD_MAX,
  CONTROLLER_FAILED_FIELD,
  encodeStderr,
  ENDED_WITHOUT_HEADERS_FIELD,
  HOST_STDERR_FIELD,
} from '../../common/protocol.ts';
import { declaredLength, FRAMING_FIELDS, withinDeclaredLength } from './answerFraming.ts';
import { ControllerExit, ControllerHeadTooLargeError } from './errors.ts';

/** The host's own signals to the proxy: never a controller's to send. */
const HOST_SIGNALS: readonly string[] = [HOST_STDERR_FIELD, ENDED_WITHOUT_HEADERS_FIELD, CONTROLLER_ANSWER_FIELD, CONTROLLER_FAILED_FIELD];

/** Logs a body's failure after its answer began; returns the stderr text for the trailer. */
export type FailedWhileSending = (err: unknown) => string;

/** Why a trailer function gives no value: fastify then leaves the trailer out. */
const NO_FAILURE = new Error('the body did not fail');

/** A controller's body, its first chunks already read; the controller's stream is told when it is not read to its end. */
async function* chunksOf(held: Uint8Array[], reader: ReadableStreamDefaultReader<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    yield* held;
    for (;;) {
      const next = await reader.read().catch(endAtExit);
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // The client may have left (the stream is destroyed), or the body broke its framing.
    reader.cancel().catch(() => {});
  }
}

/** `chunks` with `failed` called on a failure: it rethrows to cut the answer, or returns so its framing closes normally. */
async function* reportingFailure(chunks: AsyncIterable<Uint8Array>, failed: (err: unknown) => void): AsyncGenerator<Uint8Array> {
  try {
    yield* chunks;
  } catch (err) {
    failed(err);
  }
}

/** process.exit() in the body's code ends the body where it is, as PHP's output ends at `exit` (host/worker/workerExit.ts). */
function endAtExit(err: unknown): { done: true; value: undefined } {
  if (err instanceof ControllerExit) return { done: true, value: undefined };
  throw err;
}

/** The bytes a Response's fields take in an HTTP/1.1 head: `name: value` and CRLF each. */
function fieldBytes(headers: Headers): number {
  let bytes = 0;
  for (const [name, value] of headers) bytes += name.length + value.length + 4;
  return bytes;
}

/**
 * Sends the result: a Response through sendResponse() (a promise), anything else at once.
 */
export function sendResult(
  reply: FastifyReply,
  result: unknown,
  failedWhileSending: FailedWhileSending,
  outputBuffering: number,
): FastifyReply | Promise<FastifyReply> {
  if (result instanceof Response) return sendResponse(reply, result, failedWhileSending, outputBuffering);
  if (result === undefined || result === null) {
    return reply.type('text/html; charset=UTF-8').send('');
  }
  if (typeof result === 'string' || typeof result === 'number' || typeof result === 'boolean' || typeof result === 'bigint') {
    return reply.type('text/html; charset=UTF-8').send(String(result));
  }
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(result));
}

/**
 * Whether an answer of `status` to `method` carries a body: a Content-Length on one that does not describes no bytes.
 * (A Response's status is 200 to 599: its constructor refuses any other.)
 */
function hasBody(method: string, status: number): boolean {
  return method !== 'HEAD' && status !== 204 && status !== 304;
}

/**
 * The Response's fields as they go out: never the host's signals nor the fields that frame a connection (the
 * host's own). A Response from fetch() that names a content-encoding holds a body undici has already decoded
 * (its url is set; undici keeps the wire's Content-Encoding and Content-Length, nodejs/undici#2514): it goes
 * without both, as Bun.serve sends it, so its client gets a body its fields describe.
 */
function fieldsToSend(result: Response): [string, string][] {
  const decodedRelay = result.url !== '' && result.headers.has('content-encoding');
  const fields: [string, string][] = [];
  result.headers.forEach((value, key) => {
    if (HOST_SIGNALS.includes(key) || FRAMING_FIELDS.has(key)) return;
    if (decodedRelay && (key === 'content-encoding' || key === 'content-length')) return;
    fields.push([key, value]);
  });
  return fields;
}

/**
 * A Response's first chunk is read before its head goes out (as fastify's stream does anyway), so a body
 * that fails at once is the controller's failure (thrown, H4); one that fails later gets `failedWhileSending`
 * and the trailer. A declared Content-Length goes out as declared and the body is held to it
 * (answerFraming.ts): one that runs past it or ends short is cut, and its connection closed.
 */
async function sendResponse(
  reply: FastifyReply,
  result: Response,
  failedWhileSending: FailedWhileSending,
  outputBuffering: number,
): Promise<FastifyReply> {
  const headBytes = fieldBytes(result.headers);
  if (headBytes > CONTROLLER_HEAD_MAX) {
    result.body?.cancel().catch(() => {});
    throw new ControllerHeadTooLargeError(headBytes, CONTROLLER_HEAD_MAX);
  }
  const fields = fieldsToSend(result);
  const lengthAt = fields.findIndex(([key]) => key === 'content-length');
  const declared = lengthAt === -1 ? undefined : declaredLength(fields[lengthAt][1]);
  // A length that is no byte count is no framing at all: the host frames the body itself.
  if (lengthAt !== -1 && declared === undefined) fields.splice(lengthAt, 1);
  const counted = declared !== undefined && hasBody(reply.request.method, result.status);
  let body: Readable | Buffer | string = '';
  if (result.body) {
    const reader = (result.body as ReadableStream<Uint8Array>).getReader();
    // PHP's output_buffering: the status is not committed until this much is written (at least one chunk).
    const held: Uint8Array[] = [];
    let heldBytes = 0;
    let ended = false;
    try {
      do {
        const next = await reader.read().catch(endAtExit);
        if (next.done) ended = true;
        else {
          held.push(next.value);
          heldBytes += next.value.byteLength;
        }
      } while (!ended && heldBytes < outputBuffering);
    } catch (err) {
      // Nothing written: the controller's failure, as a throw (H4, Apache's page).
      if (heldBytes === 0) throw err;
      if (reply.sent || reply.raw.destroyed) return reply;
      // Within the buffer the status is still ours to change: 500 with what was written, as PHP answers.
      const stderr = failedWhileSending(err);
      reply.code(500);
      for (const [key, value] of fields) if (key !== 'content-length') reply.header(key, value);
      return reply.header(CONTROLLER_ANSWER_FIELD, '1').header(HOST_STDERR_FIELD, encodeStderr(stderr)).send(Buffer.concat(held));
    }
    // The controller overran its limit meanwhile (the connection is cut) or the client left.
    if (reply.sent || reply.raw.destroyed) {
      reader.cancel().catch(() => {});
      return reply;
    }
    if (ended && (!counted || heldBytes === declared)) body = Buffer.concat(held);
    else {
      // Trailers need chunked framing: under a declared length a failure cuts the connection instead (P4).
      const trailed = declared === undefined;
      let stderr: string | undefined;
      const failed = (err: unknown) => {
        stderr = failedWhileSending(err);
        if (!trailed) throw err;
      };
      const chunks = chunksOf(held, reader);
      body = Readable.from(reportingFailure(counted ? withinDeclaredLength(chunks, declared) : chunks, failed), { objectMode: false });
      if (trailed) {
        reply.trailer(HOST_STDERR_FIELD, (_reply, _payload, done) =>
          stderr === undefined ? done(NO_FAILURE) : done(null, encodeStderr(stderr)),
        );
      }
    }
  } else if (counted && declared !== 0) {
    // No body under a length of some bytes: it ends short at once, cut like any other.
    const cut = (err: unknown) => {
      failedWhileSending(err);
      throw err;
    };
    body = Readable.from(reportingFailure(withinDeclaredLength([], declared), cut), { objectMode: false });
  }
  reply.code(result.status);
  for (const [key, value] of fields) reply.header(key, value);
  // A controller's error status is its answer, which the proxy relays (not the host's own, common/protocol.ts).
  if (result.status >= 400) reply.header(CONTROLLER_ANSWER_FIELD, '1');
  return reply.send(body);
}
