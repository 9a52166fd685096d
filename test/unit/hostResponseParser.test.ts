import { expect } from 'chai';
import { HostProtocolError, HostResponseParser } from '../../proxy/hostResponseParser.ts';

type Fields = Record<string, string | string[]>;

interface Read {
  heads: { status: number; fields: Fields }[];
  body: string;
  trailers: Fields[];
  parser: HostResponseParser;
}

/** Feeds `pieces` in order to a new parser and records what it reports. */
function read(pieces: (string | Buffer)[], headRequest = false): Read {
  const out: Omit<Read, 'parser'> = { heads: [], body: '', trailers: [] };
  const parser = new HostResponseParser(
    {
      head: (status, fields) => out.heads.push({ status, fields: { ...fields } }),
      body: (chunk) => (out.body += chunk.toString('latin1')),
      end: (trailers) => out.trailers.push({ ...trailers }),
    },
    headRequest,
  );
  for (const piece of pieces) parser.feed(Buffer.isBuffer(piece) ? piece : Buffer.from(piece, 'latin1'));
  return { ...out, parser };
}

/** `text` in two pieces, cut at every byte, and in one byte pieces: each must read as the whole does. */
function everySplit(text: string): (string | Buffer)[][] {
  const splits: string[][] = [[text], text.split('')];
  for (let at = 1; at < text.length; at++) splits.push([text.slice(0, at), text.slice(at)]);
  return splits;
}

const LENGTH_ANSWER =
  'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nset-cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n{"ok":true}';
const CHUNKED_ANSWER =
  'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nTrailer: x-extqs-stderr\r\n\r\n' +
  '5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nx-extqs-stderr: late\r\n\r\n';

describe('hostResponseParser', () => {
  it('reads a Content-Length answer the same however its bytes are cut', () => {
    for (const pieces of everySplit(LENGTH_ANSWER)) {
      const { heads, body, trailers, parser } = read(pieces);
      expect(heads).to.deep.equal([
        { status: 200, fields: { 'content-type': 'application/json', 'content-length': '11', 'set-cookie': ['a=1', 'b=2'] } },
      ]);
      expect(body).to.equal('{"ok":true}');
      expect(trailers).to.deep.equal([{}]);
      expect(parser.keepAlive).to.equal(true);
    }
  });

  it('reads a chunked answer and its trailers the same however its bytes are cut', () => {
    for (const pieces of everySplit(CHUNKED_ANSWER)) {
      const { heads, body, trailers, parser } = read(pieces);
      expect(heads.map((h) => h.status)).to.deep.equal([200]);
      expect(body).to.equal('hello, world');
      expect(trailers).to.deep.equal([{ 'x-extqs-stderr': 'late' }]);
      expect(parser.close(), 'ended before the connection').to.equal(true);
    }
  });

  it('ends a chunked answer without trailers at its last chunk', () => {
    const { body, trailers } = read(['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n']);
    expect(body).to.equal('abc');
    expect(trailers).to.deep.equal([{}]);
  });

  it('skips interim answers and reads the final one', () => {
    const { heads, body } = read(['HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n', LENGTH_ANSWER]);
    expect(heads.map((h) => h.status)).to.deep.equal([200]);
    expect(body).to.equal('{"ok":true}');
  });

  it('reads no body after HEAD, 204 and 304, whatever their fields say', () => {
    const head = read(['HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n'], true);
    expect(head.trailers).to.deep.equal([{}]);
    for (const status of ['204 No Content', '304 Not Modified']) {
      const { trailers, body } = read([`HTTP/1.1 ${status}\r\ncontent-length: 11\r\n\r\n`]);
      expect(trailers).to.deep.equal([{}]);
      expect(body).to.equal('');
    }
  });

  it('reads a body without length to the connection end, and keeps no such connection', () => {
    const { parser, body, trailers } = read(['HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nsome', ' more']);
    expect(trailers, 'not ended before the connection').to.deep.equal([]);
    expect(parser.keepAlive).to.equal(false);
    expect(parser.close()).to.equal(true);
    expect(body).to.equal('some more');
    expect(trailers).to.deep.equal([{}]);
  });

  it('says an answer cut short by the connection end came short', () => {
    const { parser, heads, trailers } = read(['HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{"ok"']);
    expect(heads).to.have.length(1);
    expect(parser.close()).to.equal(false);
    expect(trailers).to.deep.equal([]);
    const cutInHead = read(['HTTP/1.1 200 O']);
    expect(cutInHead.parser.close()).to.equal(false);
    expect(cutInHead.heads).to.deep.equal([]);
  });

  it('keeps the connection unless the host says close (or speaks HTTP/1.0 without keep-alive)', () => {
    expect(read(['HTTP/1.1 200 OK\r\nConnection: close\r\ncontent-length: 0\r\n\r\n']).parser.keepAlive).to.equal(false);
    expect(read(['HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n']).parser.keepAlive).to.equal(false);
    expect(read(['HTTP/1.0 200 OK\r\nConnection: keep-alive\r\ncontent-length: 0\r\n\r\n']).parser.keepAlive).to.equal(true);
    const repeated = 'HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\ncontent-length: 0\r\n\r\n';
    expect(read([repeated]).parser.keepAlive).to.equal(false);
  });

  it('refuses what is no HTTP/1.1 answer with an error naming it', () => {
    const refusals: [string, RegExp][] = [
      ['HTTP/2 200\r\n\r\n', /no HTTP\/1.1 status line/],
      ['HTTP/1.1 200 OK\r\nno colon here\r\n\r\n', /malformed field line/],
      ['HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n', /malformed field line/],
      ['HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n', /Content-Length -1/],
      ['HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n', /Content-Length 1,2/],
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n', /Transfer-Encoding gzip, chunked/],
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n', /malformed chunk-size/],
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nab\r\n', /chunk not followed by CR LF/],
      ['HTTP/1.1 101 Switching Protocols\r\n\r\n', /101/],
      ['HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nab', /bytes after the end/],
      ['HTTP/1.1 200 OK\r\nx-a: one\ntwo\r\ncontent-length: 0\r\n\r\n', /control byte in the value of x-a/],
      ['HTTP/1.1 200 OK\r\nx-a: \x01\r\ncontent-length: 0\r\n\r\n', /control byte/],
      [`HTTP/1.1 200 OK\r\nx-long: ${'a'.repeat(17 * 1024)}\r\ncontent-length: 0\r\n\r\n`, /16 KiB/],
    ];
    for (const [answer, message] of refusals) {
      expect(() => read([answer]), answer).to.throw(HostProtocolError, message);
    }
  });

  it('refuses a head that never ends past 16 KiB instead of holding it', () => {
    const parser = new HostResponseParser({ head: () => undefined, body: () => undefined, end: () => undefined }, false);
    parser.feed(Buffer.from('HTTP/1.1 200 OK\r\n'));
    const field = Buffer.from(`x-long: ${'a'.repeat(4 * 1024)}\r\n`);
    expect(() => {
      for (let i = 0; i < 5; i++) parser.feed(field);
    }).to.throw(HostProtocolError, /16 KiB/);
  });
});
