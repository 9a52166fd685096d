import { expect } from 'chai';
import { HostProtocolError, HostResponseParser } from '../../proxy/forward/hostResponseParser.ts';

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

  it('refuses with an error whose code is EPROTO, quoting at most 64 characters of the line it could not read', () => {
    const error = (answer: string) => {
      try {
        read([answer]);
      } catch (err) {
        return err as HostProtocolError;
      }
      throw new Error(`read ${JSON.stringify(answer)}`);
    };
    expect(error('HTTP/2 200\r\n\r\n').code).to.equal('EPROTO');
    expect(error(`${'X'.repeat(100)}\r\n\r\n`).message).to.equal(`no HTTP/1.1 status line: "${'X'.repeat(64)}"`);
    expect(error(`HTTP/1.1 200 OK\r\n${'y'.repeat(100)}\r\n\r\n`).message).to.equal(`a malformed field line: "${'y'.repeat(64)}"`);
  });

  it('reads a status line strictly: three digits from 100, a reason phrase or none, nothing before or after', () => {
    expect(read(['HTTP/1.1 204\r\n\r\n']).heads.map((h) => h.status)).to.deep.equal([204]);
    for (const line of ['HTTP/1.1 099 Low', 'HTTP/1.1 2000 OK', 'XHTTP/1.1 200 OK', 'HTTP/1.1 20 OK'])
      expect(() => read([`${line}\r\ncontent-length: 0\r\n\r\n`]), line).to.throw(HostProtocolError, /no HTTP\/1.1 status line/);
  });

  it('reads a chunk-size line strictly: hex digits, then extensions after optional blanks, nothing else', () => {
    const chunked = (sizeLine: string, data: string) =>
      read([`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${sizeLine}\r\n${data}\r\n0\r\n\r\n`]).body;
    expect(chunked('10', 'a'.repeat(16))).to.equal('a'.repeat(16));
    expect(chunked('5 ; ext=1', 'hello')).to.equal('hello');
    for (const sizeLine of ['5x', 'x5', '5 x'])
      expect(() => chunked(sizeLine, 'hello'), sizeLine).to.throw(HostProtocolError, /malformed chunk-size/);
  });

  it('refuses a chunk followed by anything but CR LF, either byte wrong', () => {
    for (const after of ['\rX', 'X\n'])
      expect(() => read([`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na${after}0\r\n\r\n`]), JSON.stringify(after)).to.throw(
        HostProtocolError,
        /chunk not followed by CR LF/,
      );
  });

  it('ends a chunked answer without trailers the same however its bytes are cut', () => {
    for (const pieces of everySplit('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n')) {
      const { body, trailers } = read(pieces);
      expect(body).to.equal('abc');
      expect(trailers).to.deep.equal([{}]);
    }
  });

  it('reads a trailer section that is no empty line as fields, refusing a malformed one by name', () => {
    for (const trailer of ['x\nfoo: 1', '\rx: 1'])
      expect(
        () => read([`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n${trailer}\r\n\r\n`]),
        JSON.stringify(trailer),
      ).to.throw(HostProtocolError, /malformed field line/);
  });

  it('takes a head, and trailers, of exactly 16 KiB, also after an interim answer, and refuses one byte more', () => {
    const headOf = (bytes: number) => {
      const start = 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\nx-pad: ';
      return start + 'a'.repeat(bytes - start.length);
    };
    const interim = 'HTTP/1.1 100 Continue\r\n\r\n';
    expect(read([interim + headOf(16 * 1024) + '\r\n\r\n']).heads).to.have.length(1);
    expect(() => read([interim + headOf(16 * 1024 + 1) + '\r\n\r\n'])).to.throw(HostProtocolError, /16 KiB/);
    // Held whole while its end has not come: 16 KiB is still a head.
    expect(read([headOf(16 * 1024), '\r\n\r\n']).trailers).to.deep.equal([{}]);
    const trailersOf = (bytes: number) =>
      `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\nx-t: ${'t'.repeat(bytes - 'x-t: '.length)}\r\n\r\n`;
    expect(read([trailersOf(16 * 1024)]).trailers[0]['x-t']).to.have.length(16 * 1024 - 5);
    expect(() => read([trailersOf(16 * 1024 + 1)])).to.throw(HostProtocolError, /16 KiB/);
  });

  it('takes a chunk-size line of 1 KiB still without its end, also after the head, and refuses one byte more', () => {
    const head = 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n';
    const sizeLine = (bytes: number) => `1;${'e'.repeat(bytes - 2)}`;
    expect(read([head + sizeLine(1024), '\r\na\r\n0\r\n\r\n']).body).to.equal('a');
    expect(() => read([head + sizeLine(1025)])).to.throw(HostProtocolError, /a chunk-size line past 1 KiB/);
  });

  it('refuses a Content-Length that is not digits alone, and ends an answer of length 0 at its head', () => {
    expect(() => read(['HTTP/1.1 200 OK\r\ncontent-length: 12abc\r\n\r\n'])).to.throw(HostProtocolError, /Content-Length 12abc/);
    const empty = read(['HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n']);
    expect(empty.trailers).to.deep.equal([{}]);
    expect(empty.parser.close()).to.equal(true);
  });

  it('keeps every value of a field repeated three times, in order, and reads a close among several Connection values', () => {
    const { heads } = read(['HTTP/1.1 200 OK\r\nx-a: 1\r\nx-a: 2\r\nX-A: 3\r\ncontent-length: 0\r\n\r\n']);
    expect(heads[0].fields['x-a']).to.deep.equal(['1', '2', '3']);
    const closeFirst = 'HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: upgrade\r\ncontent-length: 0\r\n\r\n';
    expect(read([closeFirst]).parser.keepAlive).to.equal(false);
  });

  it('refuses a field line without a colon, even one that is a valid name', () => {
    expect(() => read(['HTTP/1.1 200 OK\r\nnocolon\r\ncontent-length: 0\r\n\r\n'])).to.throw(HostProtocolError, /malformed field line/);
  });

  it('refuses Content-Length with Transfer-Encoding, in either order (RFC 9112 §6.2, §6.3)', () => {
    for (const fields of ['content-length: 3\r\ntransfer-encoding: chunked', 'transfer-encoding: chunked\r\ncontent-length: 3'])
      expect(() => read([`HTTP/1.1 200 OK\r\n${fields}\r\n\r\n3\r\nabc\r\n0\r\n\r\n`]), fields).to.throw(
        HostProtocolError,
        /Content-Length with Transfer-Encoding/,
      );
  });

  it('reads chunk extensions as RFC 9112 writes them: a token, then a token or a quoted string', () => {
    const chunked = (sizeLine: string) =>
      read([`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${sizeLine}\r\nabc\r\n0\r\n\r\n`]).body;
    for (const sizeLine of ['3;a', '3;a=b;c', '3;a="x ; \\"y\\""', '3 ;a = b']) expect(chunked(sizeLine), sizeLine).to.equal('abc');
    for (const sizeLine of ['3;', '3;a=', '3;a=\x01', '3;a="open', '3;a b'])
      expect(() => chunked(sizeLine), JSON.stringify(sizeLine)).to.throw(HostProtocolError, /malformed chunk-size/);
  });

  it('takes a head of 16 KiB and a chunk-size line of 1 KiB however they are cut, even inside the CR LF that ends them', () => {
    const start = 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nx-pad: ';
    const head = start + 'a'.repeat(16 * 1024 - start.length);
    const sizeLine = `1;${'e'.repeat(1022)}`;
    const answer = `${head}\r\n\r\n${sizeLine}\r\na\r\n0\r\n\r\n`;
    for (const at of [head.length + 1, head.length + 2, head.length + 3, head.length + 4 + sizeLine.length + 1])
      expect(read([answer.slice(0, at), answer.slice(at)]).body, `cut at ${at}`).to.equal('a');
  });

  it('refuses a line ended by LF alone at once, not when the head would end', () => {
    for (const start of ['HTTP/1.1 200 OK\n', 'HTTP/1.1 200 OK\r\nx-a: 1\n', `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\n`])
      expect(() => read([start]), JSON.stringify(start)).to.throw(HostProtocolError, /a line ended by LF alone/);
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
