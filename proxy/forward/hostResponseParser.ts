// The host's HTTP/1.1 answers as the builtin engine (forwardBuiltin.ts) reads them, byte by byte as they come: a
// status line and fields, then a body framed by Content-Length, chunked (with trailers, where the host puts a
// controller's late stderr), or by the connection's end; none after HEAD, 204, 304. Interim 1xx heads are
// skipped. It reads what an HTTP/1.1 server may send, strictly (RFC 9112), and refuses the rest with an error
// naming it: the host is this project's, and anything else on the wire means the connection is not to be trusted.

import { fieldTable } from '../../common/nullObject.ts';

type Fields = Record<string, string | string[]>;

export interface ResponseHandler {
  /** The final head: its status and fields (names in lower case; a repeated name's values in an array). */
  head(status: number, fields: Fields): void;
  body(chunk: Buffer): void;
  /** The body ended, with these trailers (an empty object when it had none). */
  end(trailers: Fields): void;
}

/** What the host sent that is no HTTP/1.1 answer: the connection is closed and the request fails. */
export class HostProtocolError extends Error {
  readonly code = 'EPROTO';
}

/** A head or trailer section past this is refused, as the http-proxy engine refuses one past Node's 16 KiB. */
const MAX_HEAD_BYTES = 16 * 1024;
/** A chunk-size line: the size in hex and any extensions. */
const MAX_CHUNK_LINE = 1024;
/** A status is three digits, its first digit its class (RFC 9110 §15): one below 100 is no answer. */
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d{2})(?: [^\r\n]*)?$/;
/** A field name, a chunk extension's name (RFC 9110 §5.6.2). */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const FIELD_NAME = new RegExp(`^${TOKEN}$`);
/** What a field value may not hold (RFC 9110 §5.5): control bytes other than HTAB, a bare CR or LF among them. */
// eslint-disable-next-line no-control-regex -- control bytes are what it finds
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;
/** A quoted-string (RFC 9110 §5.6.4), which a chunk extension's value may be. */
const QUOTED = '"(?:[\\t !#-\\[\\]-~\\x80-\\xff]|\\\\[\\t -~\\x80-\\xff])*"';
/** The size in hex, then extensions as RFC 9112 §7.1.1 writes them: `;name` or `;name=value`, blanks around. */
const CHUNK_SIZE = new RegExp(`^([0-9A-Fa-f]{1,12})(?:[ \\t]*;[ \\t]*${TOKEN}(?:[ \\t]*=[ \\t]*(?:${TOKEN}|${QUOTED}))?)*$`);
const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');

const enum State {
  Head,
  Length,
  ChunkSize,
  ChunkData,
  ChunkDataEnd,
  Trailers,
  UntilClose,
  Done,
}

export class HostResponseParser {
  private state = State.Head;
  /** Bytes of a head, chunk-size line or trailer section not yet whole. */
  private pending: Buffer | undefined;
  /** Body bytes left: of a Content-Length body, or of the current chunk. */
  private remaining = 0;
  /** Whether the connection may carry another request once this answer has ended. */
  keepAlive = true;

  constructor(
    private readonly handler: ResponseHandler,
    /** A HEAD's answer has a head only, whatever its fields say. */
    private readonly headRequest: boolean,
  ) {}

  /** Reads `chunk`; throws HostProtocolError on what is not HTTP/1.1, or bytes after the answer's end. */
  feed(chunk: Buffer): void {
    const data = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    // Bytes kept from before were looked at in the state they were kept in (keep()): only the new ones are now.
    const fresh = this.pending ? this.pending.length : 0;
    this.pending = undefined;
    let at = 0;
    while (at < data.length) {
      switch (this.state) {
        case State.Head: {
          const end = data.indexOf(HEAD_END, at);
          if (end === -1) return this.keep(data, at, fresh, HEAD_END, MAX_HEAD_BYTES, 'a head past 16 KiB');
          if (end - at > MAX_HEAD_BYTES) throw new HostProtocolError('a head past 16 KiB');
          this.readHead(data.toString('latin1', at, end));
          at = end + HEAD_END.length;
          break;
        }
        case State.Length:
        case State.ChunkData: {
          const take = Math.min(this.remaining, data.length - at);
          this.remaining -= take;
          const piece = data.subarray(at, at + take);
          at += take;
          if (this.remaining === 0) this.state = this.state === State.Length ? State.Done : State.ChunkDataEnd;
          this.handler.body(piece);
          if (this.state === State.Done) this.handler.end({});
          break;
        }
        case State.ChunkSize: {
          const end = data.indexOf(CRLF, at);
          if (end === -1) return this.keep(data, at, fresh, CRLF, MAX_CHUNK_LINE, 'a chunk-size line past 1 KiB');
          if (end - at > MAX_CHUNK_LINE) throw new HostProtocolError('a chunk-size line past 1 KiB');
          const size = CHUNK_SIZE.exec(data.toString('latin1', at, end));
          if (!size) throw new HostProtocolError('a malformed chunk-size line');
          this.remaining = parseInt(size[1], 16);
          this.state = this.remaining === 0 ? State.Trailers : State.ChunkData;
          at = end + CRLF.length;
          break;
        }
        case State.ChunkDataEnd: {
          if (data.length - at < CRLF.length) return this.keep(data, at, fresh, CRLF, 0, 'a chunk not followed by CR LF');
          if (data[at] !== 0x0d || data[at + 1] !== 0x0a) throw new HostProtocolError('a chunk not followed by CR LF');
          at += CRLF.length;
          this.state = State.ChunkSize;
          break;
        }
        case State.Trailers: {
          // No trailers: the empty line at once. Else fields up to an empty line.
          if (data.length - at < CRLF.length) return this.keep(data, at, fresh, HEAD_END, MAX_HEAD_BYTES, 'a head past 16 KiB');
          if (data[at] === 0x0d && data[at + 1] === 0x0a) {
            at += CRLF.length;
            this.finish({});
            break;
          }
          const end = data.indexOf(HEAD_END, at);
          if (end === -1) return this.keep(data, at, fresh, HEAD_END, MAX_HEAD_BYTES, 'a head past 16 KiB');
          if (end - at > MAX_HEAD_BYTES) throw new HostProtocolError('a head past 16 KiB');
          const trailers = fieldTable<string | string[]>();
          readFields(data.toString('latin1', at, end).split('\r\n'), 0, trailers);
          at = end + HEAD_END.length;
          this.finish(trailers);
          break;
        }
        case State.UntilClose:
          this.handler.body(data.subarray(at));
          return;
        case State.Done:
          throw new HostProtocolError('bytes after the end of an answer');
      }
    }
  }

  /** The connection ended: true when that ends the answer (a body read to the close), false when it came short. */
  close(): boolean {
    if (this.state !== State.UntilClose) return this.state === State.Done;
    this.finish({});
    return true;
  }

  /**
   * Holds the bytes from `at` of a section not yet ended by `end`, looking at those from `fresh` on: a line ended by
   * LF alone is refused now, as is a section past `limit` bytes (what it holds of its `end` not counted).
   */
  private keep(data: Buffer, at: number, fresh: number, end: Buffer, limit: number, pastLimit: string): void {
    for (let lf = data.indexOf(0x0a, Math.max(at, fresh)); lf !== -1; lf = data.indexOf(0x0a, lf + 1))
      if (lf === at || data[lf - 1] !== 0x0d) throw new HostProtocolError('a line ended by LF alone');
    const rest = data.subarray(at);
    if (rest.length - heldOf(rest, end) > limit) throw new HostProtocolError(pastLimit);
    this.pending = rest;
  }

  private finish(trailers: Fields): void {
    this.state = State.Done;
    this.handler.end(trailers);
  }

  private readHead(text: string): void {
    const lines = text.split('\r\n');
    const statusLine = STATUS_LINE.exec(lines[0]);
    if (!statusLine) throw new HostProtocolError(`no HTTP/1.1 status line: ${JSON.stringify(lines[0].slice(0, 64))}`);
    const status = Number(statusLine[2]);
    const fields = fieldTable<string | string[]>();
    readFields(lines, 1, fields);
    // An interim answer (100 Continue, 103 Early Hints) is followed by the real one.
    if (status < 200) {
      if (status === 101) throw new HostProtocolError('101 Switching Protocols, never asked for');
      return;
    }
    const connection = fields.connection;
    const options = connection === undefined ? '' : (typeof connection === 'string' ? connection : connection.join(',')).toLowerCase();
    this.keepAlive = statusLine[1] === '1' ? !/\bclose\b/.test(options) : /\bkeep-alive\b/.test(options);
    const bodyless = this.headRequest || status === 204 || status === 304;
    if (bodyless) this.state = State.Done;
    else if (fields['transfer-encoding'] !== undefined) {
      // A sender must not send both (RFC 9112 §6.2); a message with both ought to be handled as an error (§6.3).
      if (fields['content-length'] !== undefined) throw new HostProtocolError('Content-Length with Transfer-Encoding');
      if (String(fields['transfer-encoding']).toLowerCase() !== 'chunked')
        throw new HostProtocolError(`Transfer-Encoding ${String(fields['transfer-encoding'])}`);
      this.state = State.ChunkSize;
    } else if (fields['content-length'] !== undefined) {
      const length = fields['content-length'];
      if (typeof length !== 'string' || !/^\d{1,15}$/.test(length)) throw new HostProtocolError(`Content-Length ${String(length)}`);
      this.remaining = Number(length);
      this.state = this.remaining === 0 ? State.Done : State.Length;
    } else {
      this.state = State.UntilClose;
      this.keepAlive = false;
    }
    this.handler.head(status, fields);
    if (this.state === State.Done) this.handler.end({});
  }
}

/** How many bytes `data` ends with that begin `end`: an end not yet whole. */
function heldOf(data: Buffer, end: Buffer): number {
  for (let held = Math.min(end.length - 1, data.length); held > 0; held--)
    if (data.subarray(data.length - held).equals(end.subarray(0, held))) return held;
  return 0;
}

/** `name: value` lines from `lines[from]` into `fields`. */
function readFields(lines: string[], from: number, fields: Fields): void {
  for (let i = from; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    if (!FIELD_NAME.test(name)) throw new HostProtocolError(`a malformed field line: ${JSON.stringify(line.slice(0, 64))}`);
    const key = name.toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (CONTROL.test(value)) throw new HostProtocolError(`a control byte in the value of ${name}`);
    const had = fields[key];
    if (had === undefined) fields[key] = value;
    else if (typeof had === 'string') fields[key] = [had, value];
    else had.push(value);
  }
}
