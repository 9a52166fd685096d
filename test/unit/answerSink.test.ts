// The answer sink without a server: a response double records what reaches it, so each test sees what
// the encoder in front of it decided and wrote, and that the response's own methods were never replaced.
import { EventEmitter } from 'node:events';
import type { OutgoingHttpHeaders } from 'node:http';
import { brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { EncodingSink, responseWritingTo } from '../../proxy/core/answerSink.ts';
import type { Negotiated } from '../../proxy/core/compression.ts';
import type { RequestContext } from '../../proxy/core/requestContext.ts';

/** What the sink uses of a ServerResponse, recording the head and the body pieces that reach it. */
class ResponseDouble extends EventEmitter {
  headers = new Map<string, OutgoingHttpHeaders[string]>();
  statusCode = 200;
  status: number | undefined;
  pieces: Buffer[] = [];
  ended = false;
  destroyed = false;
  /** What write() answers: false plays a full socket. */
  accepting = true;

  setHeader(name: string, value: OutgoingHttpHeaders[string]) {
    this.headers.set(name.toLowerCase(), value);
    return this;
  }
  getHeader(name: string) {
    return this.headers.get(name.toLowerCase());
  }
  removeHeader(name: string) {
    this.headers.delete(name.toLowerCase());
  }
  writeHead(status: number, fields?: OutgoingHttpHeaders) {
    expect(this.status, 'one head').to.equal(undefined);
    this.status = status;
    for (const name in fields ?? {}) this.setHeader(name, fields![name]);
    return this;
  }
  write(chunk: Buffer) {
    expect(this.status, 'the head before the body').to.not.equal(undefined);
    this.pieces.push(chunk);
    this.emit('piece');
    return this.accepting;
  }
  end(chunk?: Buffer) {
    if (chunk) this.write(chunk);
    this.ended = true;
    this.emit('finish');
    return this;
  }
  destroy() {
    this.destroyed = true;
  }
  get body() {
    return Buffer.concat(this.pieces);
  }
}

const OWN_METHODS = ['writeHead', 'write', 'end'] as const;

function contextOf(res: ResponseDouble, method = 'GET') {
  return { req: { method }, res, encodedBytes: undefined } as unknown as RequestContext & { res: ResponseDouble };
}

function negotiated(codings: Negotiated['codings'], revalidating?: 'gzip' | 'br'): Negotiated {
  return { codings, revalidating, ifNoneMatch: undefined };
}

const JSON_BODY = Buffer.from(
  JSON.stringify({ rows: Array.from({ length: 120 }, (_, i) => ({ id: i, serial: `SN${100000 + i}`, ok: i % 7 > 0 })) }),
);

const ended = (res: ResponseDouble) => new Promise<void>((resolve) => (res.ended ? resolve() : res.once('finish', () => resolve())));

describe('answer sink', () => {
  it('encodes a body of declared length in one piece at its end, with the encoded head, leaving the response its own methods', () => {
    const res = new ResponseDouble();
    const ctx = contextOf(res);
    const sink = new EncodingSink(ctx, negotiated(['gzip', 'br']), { flushEachTurn: true });
    sink.head(200, {
      'content-type': 'application/json',
      'content-length': String(JSON_BODY.length),
      etag: '"v1"',
      'accept-ranges': 'bytes',
    });
    expect([res.status, res.getHeader('content-encoding'), res.getHeader('content-length'), res.getHeader('accept-ranges')]).to.deep.equal([
      200,
      'gzip',
      undefined,
      undefined,
    ]);
    expect([res.getHeader('etag'), res.getHeader('vary')]).to.deep.equal(['W/"v1-gzip"', 'Accept-Encoding']);
    expect(sink.write(JSON_BODY.subarray(0, 1000))).to.equal(true);
    expect(sink.write(JSON_BODY.subarray(1000))).to.equal(true);
    expect(res.pieces, 'nothing before the end').to.deep.equal([]);
    sink.end();
    expect(res.pieces.length, 'one piece').to.equal(1);
    expect(gunzipSync(res.body).equals(JSON_BODY)).to.equal(true);
    expect(ctx.encodedBytes).to.equal(res.body.length);
    for (const name of OWN_METHODS) expect(Object.hasOwn(res, name), name).to.equal(false);
  });

  it("gzips a short body with nginx's window and memory sizes for its length (gzip_comp_level 6)", () => {
    // Text of 7,000 mostly unmatched characters: more symbols than memLevel 6's buffer holds, so zlib's
    // default sizes (a 32 KB window, memLevel 8) make other bytes.
    const symbols = 'abcdefghijklmnopqrstuvwxyz0123456789';
    let seed = 1;
    const body = Buffer.from(Array.from({ length: 7000 }, () => symbols[(seed = (seed * 48271) % 2147483647) % 36]).join(''));
    const res = new ResponseDouble();
    const sink = new EncodingSink(contextOf(res), negotiated(['gzip']), { flushEachTurn: false });
    sink.head(200, { 'content-type': 'text/plain', 'content-length': String(body.length) });
    sink.write(body);
    sink.end();
    // ngx_http_gzip_filter_module: wbits and memlevel drop by one while the body fits half the window.
    expect(res.body.equals(gzipSync(body, { level: 6 })), 'not zlib defaults').to.equal(false);
    expect(res.body.equals(gzipSync(body, { level: 6, windowBits: 13, memLevel: 6 }))).to.equal(true);
  });

  it('passes a body it must not encode as it comes, still saying Vary for a compressible type', () => {
    for (const [fields, status, vary] of [
      [{ 'content-type': 'text/plain', 'content-length': '100' }, 200, 'Accept-Encoding'],
      [{ 'content-type': 'text/plain', 'cache-control': 'no-transform' }, 200, 'Accept-Encoding'],
      [{ 'content-type': 'text/plain', 'content-encoding': 'gzip' }, 200, undefined],
      [{ 'content-type': 'image/png' }, 200, undefined],
      [{ 'content-type': 'text/plain', 'content-range': 'bytes 0-9/100' }, 206, 'Accept-Encoding'],
    ] as const) {
      const res = new ResponseDouble();
      const sink = new EncodingSink(contextOf(res), negotiated(['br']), { flushEachTurn: false });
      sink.head(status, fields);
      expect(sink.write(Buffer.from('as it is'))).to.equal(true);
      expect(res.body.toString(), JSON.stringify(fields)).to.equal('as it is');
      sink.end();
      expect([res.ended, res.getHeader('content-encoding'), res.getHeader('vary')]).to.deep.equal([true, fields['content-encoding'], vary]);
    }
  });

  it("names the client's variant in a 304's ETag, and gives a HEAD the encoded head with no body", () => {
    const notModified = new ResponseDouble();
    const sink = new EncodingSink(contextOf(notModified), negotiated(['gzip'], 'br'), { flushEachTurn: false });
    sink.head(304, { etag: '"v1"' });
    sink.end();
    expect([notModified.getHeader('etag'), notModified.getHeader('vary')]).to.deep.equal(['W/"v1-br"', 'Accept-Encoding']);
    const head = new ResponseDouble();
    const ctx = contextOf(head, 'HEAD');
    const headSink = new EncodingSink(ctx, negotiated(['br']), { flushEachTurn: false });
    headSink.head(200, { 'content-type': 'text/html', 'content-length': '5000' });
    headSink.end();
    expect([head.getHeader('content-encoding'), head.getHeader('content-length'), head.body.length, ctx.encodedBytes]).to.deep.equal([
      'br',
      undefined,
      0,
      0,
    ]);
  });

  it('streams a body of unknown length, flushing each turn, and holds its writer while the client is full', async () => {
    const res = new ResponseDouble();
    const ctx = contextOf(res);
    const sink = new EncodingSink(ctx, negotiated(['br']), { flushEachTurn: true });
    sink.head(200, { 'content-type': 'text/event-stream' });
    sink.write(Buffer.from('first piece\n'));
    // Nothing more is written: only the flush at the end of the turn can make the piece decodable.
    await new Promise((resolve) => res.once('piece', resolve));
    expect(brotliDecompressSync(res.body, { finishFlush: constants.BROTLI_OPERATION_FLUSH }).toString(), 'flushed by the turn').to.equal(
      'first piece\n',
    );
    // A full client: the encoder stops, and once its own buffer is full its writer is told to wait.
    res.accepting = false;
    const noise = Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => (i * 7919) % 251));
    let writes = 0;
    while (sink.write(noise)) if (++writes > 1000) throw new Error('never told to wait');
    const drained = new Promise<void>((resolve) => sink.onDrain(resolve));
    res.accepting = true;
    res.emit('drain');
    await drained;
    sink.end();
    await ended(res);
    const decoded = brotliDecompressSync(res.body);
    expect(decoded.length).to.equal(12 + noise.length * (writes + 1));
    expect(ctx.encodedBytes).to.equal(res.body.length);
  });

  it("gives send a view whose writes reach the sink, and pauses send's file stream while the sink is full", () => {
    const res = new ResponseDouble();
    const written: Buffer[] = [];
    let full = false;
    let resume: (() => void) | undefined;
    const sink = {
      head: (status: number) => void res.writeHead(status),
      write: (chunk: Buffer) => (written.push(chunk), !full),
      onDrain: (go: () => void) => void (resume = go),
      end: () => void res.end(),
    };
    const { view, reads } = responseWritingTo(res as never, sink);
    const file = Object.assign(new EventEmitter(), {
      paused: false,
      pause: () => (file.paused = true),
      resume: () => (file.paused = false),
    });
    reads(file as never);
    view.setHeader('Content-Type', 'text/plain');
    view.statusCode = 203;
    expect([res.getHeader('content-type'), res.statusCode]).to.deep.equal(['text/plain', 203]);
    full = true;
    expect(view.write(Buffer.from('a')), 'the view never asks send to wait on the response').to.equal(true);
    expect([res.status, file.paused]).to.deep.equal([203, true]);
    full = false;
    resume!();
    expect(file.paused).to.equal(false);
    view.end();
    expect([Buffer.concat(written).toString(), res.ended]).to.deep.equal(['a', true]);
  });
});
