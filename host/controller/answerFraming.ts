// The host owns the framing of every answer it sends (docs/design.md §6.1): a controller's Response says what
// its fields and body are, never how they are delimited on the wire. Bytes past a declared Content-Length would
// stay on the kept-alive connection to the proxy and be read as the next request's answer (another client's);
// a body short of it would hold its client until a timeout. So a declared length is kept and counted, and the
// fields that frame a connection are the host's alone.

/** Fields that frame a message or its connection (RFC 9110 §7.6.1, §6.6.2): the host's, whatever a Response says. */
export const FRAMING_FIELDS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** A body that did not end at its declared Content-Length: the answer is cut and its connection closed. */
export class AnswerLengthError extends Error {
  readonly code = 'HOST_ANSWER_LENGTH';
  constructor(
    readonly declared: number,
    /** The bytes the body had when it was stopped: at most `declared` when it ended short, more when it overran. */
    readonly actual: number,
  ) {
    super(
      actual > declared
        ? `its answer declared Content-Length ${declared} and its body ran past it (at least ${actual} bytes)`
        : `its answer declared Content-Length ${declared} and its body ended after ${actual} bytes`,
    );
    this.name = 'AnswerLengthError';
  }
}

/**
 * A declared Content-Length as a byte count; undefined when there is none, or when it is no single decimal
 * number (RFC 9110 §8.6): such a field is dropped and the host frames the body itself.
 */
export function declaredLength(value: string | null): number | undefined {
  if (value === null || !/^\d{1,15}$/.test(value.trim())) return undefined;
  return Number(value);
}

/**
 * `chunks` as they may go under a declared length of `declared` bytes: a body that runs past it or ends short
 * throws AnswerLengthError. The length's last byte is held until the body is seen to end there, so an
 * overrunning answer reaches its client one byte short at least, and the client sees the cut, never a whole answer.
 */
export async function* withinDeclaredLength(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  declared: number,
): AsyncGenerator<Uint8Array> {
  let sent = 0;
  let lastByte: Uint8Array | undefined;
  for await (const chunk of chunks) {
    if (chunk.byteLength === 0) continue;
    if (lastByte) throw new AnswerLengthError(declared, declared + chunk.byteLength);
    const room = declared - sent;
    if (chunk.byteLength < room) {
      sent += chunk.byteLength;
      yield chunk;
      continue;
    }
    // This piece reaches the length, or passes it: all of it but the length's last byte may go.
    if (room > 1) yield chunk.subarray(0, room - 1);
    if (chunk.byteLength > room) throw new AnswerLengthError(declared, sent + chunk.byteLength);
    lastByte = chunk.subarray(room - 1);
  }
  if (lastByte) yield lastByte;
  else if (sent !== declared) throw new AnswerLengthError(declared, sent);
}
