// A raw HTTP/2 frame writer over TLS for the attack tests: frames written as given, whatever a real client
// would refuse to send, and the server's frames read back as they come.
import { once } from 'node:events';
import { connect } from 'node:tls';
import { expect } from 'chai';

/** Each attack's connection must be closed (or its streams refused) within this bound. */
const ATTACK_BOUND_MS = 10_000;

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
export const FRAME = { DATA: 0x0, HEADERS: 0x1, RST_STREAM: 0x3, SETTINGS: 0x4, GOAWAY: 0x7, CONTINUATION: 0x9 } as const;
export const END_STREAM = 0x1;
export const END_HEADERS = 0x4;
export const CANCEL = 0x8;

export function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/** An HPACK string literal, not Huffman-coded (lengths below 127). */
export function literal(text: string): Buffer {
  return Buffer.concat([Buffer.from([text.length]), Buffer.from(text, 'latin1')]);
}

/** HPACK for `GET <path>` over https to localhost: static-table entries and literals without indexing. */
export function requestBlock(path: string): Buffer {
  return Buffer.concat([Buffer.from([0x82, 0x87, 0x04]), literal(path), Buffer.from([0x01]), literal('localhost')]);
}

/** A header field `x-pad-N: <value>` as a literal without indexing, its name new (its length below 127). */
export function padField(n: number, value: string): Buffer {
  const length = Buffer.alloc(3);
  // A 7-bit prefix integer for lengths from 127 up (RFC 7541 §5.1), for values longer than a byte can say.
  length[0] = 0x7f;
  length[1] = ((value.length - 127) & 0x7f) | 0x80;
  length[2] = (value.length - 127) >> 7;
  return Buffer.concat([Buffer.from([0x00]), literal(`x-pad-${n}`), length, Buffer.from(value, 'latin1')]);
}

export interface Outcome {
  /** Frame types the server sent, in order. */
  types: number[];
  /** The GOAWAY error code, if one came. */
  goaway?: number;
  rstCodes: number[];
  /** The streams the server answered (HEADERS frames). */
  answered: number[];
  closed: boolean;
}

/**
 * Opens an h2 connection, writes the preface and `chunks`, and reads frames until the server closes the
 * connection or sends GOAWAY, or `done` says the outcome is complete; ATTACK_BOUND_MS bounds the wait for a
 * server that does neither (the test then fails on what it got). After a GOAWAY for a flood, Node leaves the
 * connection to the idle timeout; no further stream is served on it.
 */
export async function attack(port: number, chunks: Buffer[], done: (outcome: Outcome) => boolean = () => false): Promise<Outcome> {
  const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', ALPNProtocols: ['h2'], rejectUnauthorized: false });
  await once(socket, 'secureConnect');
  expect(socket.alpnProtocol).to.equal('h2');
  const outcome: Outcome = { types: [], rstCodes: [], answered: [], closed: false };
  let finish: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    finish = resolve;
    socket.once('close', () => {
      outcome.closed = true;
      resolve();
    });
  });
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      const type = pending[3];
      const payload = pending.subarray(9, 9 + length);
      outcome.types.push(type);
      if (type === FRAME.GOAWAY) outcome.goaway = payload.readUInt32BE(4);
      if (type === FRAME.RST_STREAM) outcome.rstCodes.push(payload.readUInt32BE(0));
      if (type === FRAME.HEADERS) outcome.answered.push(pending.readUInt32BE(5));
      pending = pending.subarray(9 + length);
      if (outcome.goaway !== undefined || done(outcome)) finish();
    }
  });
  socket.on('error', () => {}); // a reset after the GOAWAY is part of the answer
  socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0)]));
  // The attack stops writing once the outcome is in; aborting also takes back once()'s drain and error listeners.
  const over = new AbortController();
  void ended.then(() => over.abort());
  for (const chunk of chunks) {
    if (socket.destroyed || over.signal.aborted) break;
    // once() rejects on the EPIPE of a connection the server has closed: that is the end of the attack.
    if (!socket.write(chunk)) await once(socket, 'drain', { signal: over.signal }).catch(() => undefined);
  }
  const bound = setTimeout(finish, ATTACK_BOUND_MS);
  await ended;
  clearTimeout(bound);
  socket.destroy();
  return outcome;
}
