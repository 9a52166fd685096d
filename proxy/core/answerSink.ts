// Where an answer's head and body go: the seam between what makes an answer (a forwarding engine relaying
// the host's, send reading a file) and the client's response. Either the response itself, or an encoder in
// front of it that decides from the head, as finally written, whether the body is compressed
// (compression.ts), as nginx's gzip filter sits in its output chain: the response's own methods are never
// replaced.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import type { ContentCoding } from '../../common/settings.ts';
import { encodedHead, encodeInOneCall, FLUSH, ONE_CALL_MAX, streamEncoder, type Negotiated } from './compression.ts';

/** What an answer is written to: one head, then body pieces, then the end. */
export interface AnswerSink {
  /** The status and the fields given, joined with those already set on the response (as writeHead joins them). */
  head(status: number, fields?: OutgoingHttpHeaders): void;
  /** One piece of the body; false when the writer should wait for onDrain before the next. */
  write(chunk: Buffer): boolean;
  /** Calls `resume` once, when a writer told to wait may write again. */
  onDrain(resume: () => void): void;
  end(): void;
}

/**
 * What an encoder needs of the request it answers (a RequestContext, which holds its sink): the request and
 * its response, the sink an unencoded answer goes to, and where the encoded body's bytes are counted (%b).
 */
export interface AnsweredRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly answer: AnswerSink;
  encodedBytes: number | undefined;
}

/** The response itself: what an answer that is never encoded is written to. */
export class ResponseSink implements AnswerSink {
  constructor(private readonly res: ServerResponse) {}

  head(status: number, fields?: OutgoingHttpHeaders): void {
    this.res.writeHead(status, fields);
  }

  write(chunk: Buffer): boolean {
    return this.res.write(chunk);
  }

  onDrain(resume: () => void): void {
    this.res.once('drain', resume);
  }

  end(): void {
    this.res.end();
  }
}

export interface EncodeOptions {
  /**
   * Flush the encoder at the end of each event-loop turn that wrote to it, for answers of unknown length:
   * a controller's answer that arrives in pieces (a stream, server-sent events) reaches the client as each
   * piece comes, instead of waiting in zlib's buffer for the next, while pieces that arrive together still
   * compress together. A declared length is a whole body on its way: it is not flushed.
   */
  flushEachTurn: boolean;
}

/** How the body goes once the head is decided. */
const enum Body {
  /** As it comes (not encoded, or a HEAD). */
  Passed,
  /** A declared length up to ONE_CALL_MAX: held to its end, then encoded in one call. */
  Collected,
  /** Through a zlib stream, as it comes. */
  Streamed,
}

/** An encoder in front of the response: the head decides whether the body goes encoded. */
export class EncodingSink implements AnswerSink {
  private body = Body.Passed;
  private coding: ContentCoding = 'gzip';
  private chunks: Buffer[] = [];
  private collected = 0;
  private encoder: Transform | undefined;
  private flushPending = false;
  private flushEachTurn: boolean;
  private ended = false;

  constructor(
    private readonly ctx: AnsweredRequest,
    private readonly negotiated: Negotiated,
    options: EncodeOptions,
  ) {
    this.flushEachTurn = options.flushEachTurn;
  }

  head(status: number, fields?: OutgoingHttpHeaders): void {
    const { req, res } = this.ctx;
    // Fields given join those set before, as writeHead merges them, so the decision sees them all.
    if (fields) for (const name in fields) if (fields[name] !== undefined) res.setHeader(name, fields[name]);
    const encoded = encodedHead(res, this.negotiated, status);
    if (encoded) {
      this.ctx.encodedBytes = 0;
      if (req.method !== 'HEAD') {
        this.coding = encoded.coding;
        if (encoded.length !== undefined && encoded.length <= ONE_CALL_MAX) this.body = Body.Collected;
        else this.stream(encoded.length);
      }
    }
    res.writeHead(status);
  }

  write(chunk: Buffer): boolean {
    if (this.body === Body.Collected) {
      this.chunks.push(chunk);
      this.collected += chunk.length;
      return true;
    }
    if (this.body === Body.Passed) return this.ctx.res.write(chunk);
    if (this.flushEachTurn && !this.flushPending) {
      this.flushPending = true;
      setImmediate(flushEncoder, this);
    }
    return this.encoder!.write(chunk);
  }

  onDrain(resume: () => void): void {
    if (this.body === Body.Streamed) this.encoder!.once('drain', resume);
    else this.ctx.res.once('drain', resume);
  }

  end(): void {
    const { ctx } = this;
    if (this.ended) return;
    this.ended = true;
    if (this.body === Body.Passed) return void ctx.res.end();
    if (this.body === Body.Streamed) return void this.encoder!.end();
    if (ctx.res.destroyed) return;
    const whole = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.collected);
    this.chunks = [];
    const out = encodeInOneCall(this.coding, whole);
    ctx.encodedBytes = out.length;
    ctx.res.end(out);
  }

  /** A sync flush: what was written so far becomes decodable, without resetting the compression state. */
  flushTurn(): void {
    this.flushPending = false;
    const encoder = this.encoder!;
    if (!this.ended && !encoder.destroyed) (encoder as Transform & { flush(kind: number): void }).flush(FLUSH[this.coding]);
  }

  private stream(length: number | undefined): void {
    const { ctx } = this;
    const { res } = ctx;
    const encoder = (this.encoder = streamEncoder(this.coding, length));
    this.body = Body.Streamed;
    // A declared length is a whole body on its way: only an answer of unknown length is flushed each turn.
    if (length !== undefined) this.flushEachTurn = false;
    let waiting = false;
    const resume = () => {
      waiting = false;
      encoder.resume();
    };
    encoder.on('data', (chunk: Buffer) => {
      ctx.encodedBytes! += chunk.length;
      if (res.write(chunk) || waiting) return;
      // The client's socket is full: the encoder stops, its buffer fills, and its writer waits for its 'drain'.
      waiting = true;
      encoder.pause();
      res.once('drain', resume);
    });
    encoder.once('end', () => res.end());
    encoder.once('error', (err) => res.destroy(err));
    // A client that leaves mid-answer: the encoder's memory goes at once.
    res.once('close', () => encoder.destroy());
  }
}

/** At the end of a turn that wrote to a streamed encoder (a function, not a closure made for every sink). */
function flushEncoder(sink: EncodingSink): void {
  sink.flushTurn();
}

/**
 * The sink for an answer when compression is on (`negotiated`), encoded or not (its head still gets Vary
 * and its 304 the variant's ETag), else the response itself.
 */
export function answerSink(ctx: AnsweredRequest, negotiated: Negotiated | undefined, options: EncodeOptions): AnswerSink {
  return negotiated ? new EncodingSink(ctx, negotiated, options) : ctx.answer;
}

/**
 * The response as `send` (staticFiles.ts) is given it when the file may go encoded: every field, property
 * and event is the response's own, but what send writes (its head comes with its first write or its end)
 * goes to `sink`. Its file stream is paused while the sink is full: send pipes it here, and the
 * response's 'drain' says nothing of the encoder's.
 */
export function responseWritingTo(res: ServerResponse, sink: AnswerSink): { view: ServerResponse; reads: (file: Readable) => void } {
  let file: Readable | undefined;
  let headed = false;
  let waiting = false;
  const head = () => {
    if (headed) return;
    headed = true;
    sink.head(res.statusCode);
  };
  const resume = () => {
    waiting = false;
    file?.resume();
  };
  const write = (chunk: Buffer): boolean => {
    head();
    if (sink.write(chunk) || waiting || !file) return true;
    waiting = true;
    file.pause();
    sink.onDrain(resume);
    return true;
  };
  const end = (chunk?: Buffer | string): ServerResponse => {
    head();
    if (chunk !== undefined) sink.write(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    sink.end();
    return res;
  };
  const view = new Proxy(res, {
    get(target, name) {
      if (name === 'write') return write;
      if (name === 'end') return end;
      const value = Reflect.get(target, name, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
    set: (target, name, value) => Reflect.set(target, name, value, target),
  });
  return { view, reads: (stream) => void (file = stream) };
}
