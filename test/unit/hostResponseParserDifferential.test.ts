// The builtin engine's hand-written parser (proxy/forward/hostResponseParser.ts) against Node's own llhttp, answer by
// answer: each answer of the corpus, valid or not, is fed whole, cut in two at every byte, and a byte at a time,
// to both, and they must agree on whether it is taken and how it is framed (status, fields, body bytes,
// trailers, where it ends, whether the connection may carry another request). Where the builtin parser reads
// an answer otherwise on purpose (it is stricter in places), DIFFERENCES says so with the reason, and the test
// fails if the difference goes away or changes. llhttp differs by Node line: Node 24's is the reference.
import { Agent, request, type IncomingMessage } from 'node:http';
import { Duplex } from 'node:stream';
import { expect } from 'chai';
import { HostProtocolError, HostResponseParser } from '../../proxy/forward/hostResponseParser.ts';

type Fields = Record<string, string | string[]>;

/**
 * What a client made of the bytes of one answer. ended: the answer ended at its framing (or, without one, at the
 * connection's end); cut: it had a head, then the connection ended first; broken: it had a head, then bytes that
 * are no HTTP/1.1; refused: bytes that are no HTTP/1.1 before any head; none: the connection ended before a head.
 */
interface Reading {
  outcome: 'ended' | 'cut' | 'broken' | 'refused' | 'none';
  status?: number;
  fields?: Fields;
  body: string;
  trailers?: Fields;
  /** Once ended: whether the connection may carry another request. */
  keepAlive?: boolean;
}

interface Answer {
  name: string;
  /** The bytes, as latin1. */
  bytes: string;
  /** The answer to a HEAD. */
  head?: boolean;
  /** Bytes follow the answer's end: the builtin parser refuses them (the engine then closes the connection). */
  after?: boolean;
}

/** The major version of the Node line running the test; Node 24's llhttp is the reference. */
const NODE_LINE = Number(process.versions.node.split('.')[0]);
const REFERENCE_LINE = 24;

const CL = (body: string, more = '') => `HTTP/1.1 200 OK\r\n${more}content-length: ${body.length}\r\n\r\n${body}`;
const CHUNKED_HEAD = 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n';
const pad = (bytes: number) => 'a'.repeat(bytes);
/** A head of exactly `bytes` bytes before its empty line, status line included. */
const headOf = (bytes: number) => {
  const start = 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\nx-pad: ';
  return `${start}${pad(bytes - start.length)}\r\n\r\n`;
};

const CORPUS: Answer[] = [
  // Framed by Content-Length.
  { name: 'Content-Length', bytes: CL('{"ok":true}', 'content-type: application/json\r\nset-cookie: a=1\r\nSet-Cookie: b=2\r\n') },
  { name: 'Content-Length 0', bytes: CL('') },
  { name: 'Content-Length with blanks around it', bytes: 'HTTP/1.1 200 OK\r\ncontent-length:  3 \r\n\r\nabc' },
  { name: 'Content-Length with leading zeros', bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 003\r\n\r\nabc' },
  { name: 'Content-Length of 16 digits', bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 0000000000000003\r\n\r\nabc' },
  { name: 'Content-Length, the body cut short', bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{"ok"' },
  // Chunked.
  { name: 'chunked', bytes: `${CHUNKED_HEAD}5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n` },
  {
    name: 'chunked with extensions and trailers',
    bytes: `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nTrailer: x-extqs-stderr\r\n\r\n5;ext=1\r\nhello\r\n7;a;b=c\r\n, world\r\n0\r\nx-extqs-stderr: late\r\nx-two: 1\r\n\r\n`,
  },
  { name: 'chunked, a quoted extension', bytes: `${CHUNKED_HEAD}3;name="a ; b"\r\nabc\r\n0\r\n\r\n` },
  { name: 'chunked, blanks before an extension', bytes: `${CHUNKED_HEAD}5 ; ext=1\r\nhello\r\n0\r\n\r\n` },
  { name: 'chunked, a size in capitals with leading zeros', bytes: `${CHUNKED_HEAD}00A\r\n0123456789\r\n0\r\n\r\n` },
  { name: 'chunked, Transfer-Encoding in capitals', bytes: `HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n` },
  { name: 'chunked, cut in a chunk', bytes: `${CHUNKED_HEAD}5\r\nhel` },
  { name: 'chunked, cut before the last empty line', bytes: `${CHUNKED_HEAD}3\r\nabc\r\n0\r\n` },
  { name: 'chunked, a size of 13 hex digits', bytes: `${CHUNKED_HEAD}0000000000003\r\nabc\r\n0\r\n\r\n` },
  { name: 'chunked, a size past 64 bits', bytes: `${CHUNKED_HEAD}10000000000000000\r\nabc\r\n0\r\n\r\n` },
  { name: 'chunked, a size that is no hex', bytes: `${CHUNKED_HEAD}zz\r\nabc\r\n0\r\n\r\n` },
  { name: 'chunked, a negative size', bytes: `${CHUNKED_HEAD}-1\r\nabc\r\n0\r\n\r\n` },
  { name: 'chunked, an empty size line', bytes: `${CHUNKED_HEAD}\r\nabc\r\n0\r\n\r\n` },
  { name: 'chunked, a size with something after it', bytes: `${CHUNKED_HEAD}3x\r\nabc\r\n0\r\n\r\n` },
  { name: 'chunked, a control byte in an extension', bytes: `${CHUNKED_HEAD}3;a=\x01\r\nabc\r\n0\r\n\r\n` },
  { name: 'chunked, an extension past 1 KiB', bytes: `${CHUNKED_HEAD}3;${pad(1100)}\r\nabc\r\n0\r\n\r\n` },
  { name: 'chunked, a chunk longer than its size', bytes: `${CHUNKED_HEAD}3\r\nabcd\r\n0\r\n\r\n` },
  { name: 'chunked, a size line ended by LF alone', bytes: `${CHUNKED_HEAD}3\nabc\r\n0\r\n\r\n` },
  { name: 'chunked, a chunk ended by LF alone', bytes: `${CHUNKED_HEAD}3\r\nabc\n0\r\n\r\n` },
  { name: 'chunked, a malformed trailer', bytes: `${CHUNKED_HEAD}3\r\nabc\r\n0\r\nno colon\r\n\r\n` },
  { name: 'chunked, a trailer with a control byte', bytes: `${CHUNKED_HEAD}3\r\nabc\r\n0\r\nx-t: a\x01b\r\n\r\n` },
  // Interim answers, then the final one.
  { name: '100 Continue, then the answer', bytes: `HTTP/1.1 100 Continue\r\n\r\n${CL('abc')}` },
  {
    name: '103 Early Hints and 100 Continue, then a chunked answer',
    bytes: `HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n${CHUNKED_HEAD}3\r\nabc\r\n0\r\n\r\n`,
  },
  {
    name: '101 Switching Protocols, never asked for',
    bytes: 'HTTP/1.1 101 Switching Protocols\r\nupgrade: h2c\r\nconnection: upgrade\r\n\r\n',
  },
  // No body, whatever the fields say.
  { name: '204 with a Content-Length', bytes: 'HTTP/1.1 204 No Content\r\ncontent-length: 3\r\n\r\n' },
  { name: '304 with Transfer-Encoding', bytes: 'HTTP/1.1 304 Not Modified\r\ntransfer-encoding: chunked\r\n\r\n' },
  { name: 'the answer to a HEAD, with a Content-Length', bytes: CL('').replace('content-length: 0', 'content-length: 11'), head: true },
  { name: 'the answer to a HEAD, chunked', bytes: CHUNKED_HEAD, head: true },
  { name: 'the answer to a HEAD, no length', bytes: 'HTTP/1.1 200 OK\r\n\r\n', head: true },
  // Read to the connection's end.
  { name: 'no length: the body runs to the close', bytes: 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nsome more' },
  { name: 'HTTP/1.0, no length', bytes: 'HTTP/1.0 200 OK\r\n\r\nold' },
  { name: 'a transfer coding other than chunked', bytes: 'HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\nabc' },
  { name: 'chunked not the last transfer coding', bytes: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\n\r\nabc' },
  // Keep-alive.
  { name: 'Connection: close', bytes: CL('abc', 'Connection: close\r\n') },
  { name: 'HTTP/1.0 with a length', bytes: 'HTTP/1.0 200 OK\r\ncontent-length: 3\r\n\r\nabc' },
  { name: 'HTTP/1.0 with keep-alive', bytes: 'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\ncontent-length: 3\r\n\r\nabc' },
  { name: 'close among several Connection values', bytes: CL('abc', 'Connection: keep-alive\r\nConnection: close\r\n') },
  // Status lines.
  { name: 'a status line without a reason', bytes: 'HTTP/1.1 204\r\n\r\n' },
  { name: 'a status line with an empty reason', bytes: 'HTTP/1.1 204 \r\n\r\n' },
  { name: 'a reason with tabs and obs-text', bytes: 'HTTP/1.1 200 Tout\tva tr\xe8s bien\r\ncontent-length: 0\r\n\r\n' },
  { name: 'status 599', bytes: 'HTTP/1.1 599 Custom\r\ncontent-length: 0\r\n\r\n' },
  { name: 'status 999', bytes: 'HTTP/1.1 999 Custom\r\ncontent-length: 0\r\n\r\n' },
  { name: 'a status of two digits', bytes: 'HTTP/1.1 20 OK\r\ncontent-length: 0\r\n\r\n' },
  { name: 'a status of four digits', bytes: 'HTTP/1.1 2000 OK\r\ncontent-length: 0\r\n\r\n' },
  { name: 'a status below 100', bytes: 'HTTP/1.1 099 Low\r\ncontent-length: 0\r\n\r\n' },
  { name: 'HTTP/2 as a version', bytes: 'HTTP/2 200\r\ncontent-length: 0\r\n\r\n' },
  { name: 'HTTP/1.2 as a version', bytes: 'HTTP/1.2 200 OK\r\ncontent-length: 0\r\n\r\n' },
  { name: 'the version in lower case', bytes: 'http/1.1 200 OK\r\ncontent-length: 0\r\n\r\n' },
  { name: 'two spaces before the status', bytes: 'HTTP/1.1  200 OK\r\ncontent-length: 0\r\n\r\n' },
  { name: 'a space before the status line', bytes: ' HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n' },
  { name: 'a NUL in the reason', bytes: 'HTTP/1.1 200 O\x00K\r\ncontent-length: 0\r\n\r\n' },
  { name: 'no status line at all', bytes: 'ICY 200 OK\r\ncontent-length: 0\r\n\r\n' },
  // Field lines.
  { name: 'values with obs-text, inner tabs and blanks around them', bytes: CL('', 'x-a: caf\xe9\r\nx-b:\t1\t2 \r\nx-c:\r\nx-d:   \r\n') },
  { name: 'a field repeated three times', bytes: CL('', 'x-a: 1\r\nx-a: 2\r\nX-A: 3\r\n') },
  { name: 'obs-fold', bytes: CL('abc', 'x-a: 1\r\n 2\r\n') },
  { name: 'LF alone ending every line', bytes: 'HTTP/1.1 200 OK\nx-a: 1\ncontent-length: 3\n\nabc' },
  { name: 'LF alone ending one field line', bytes: CL('abc', 'x-a: 1\nx-b: 2\r\n') },
  { name: 'CR alone in a value', bytes: CL('abc', 'x-a: 1\r2\r\n') },
  { name: 'a NUL in a value', bytes: CL('abc', 'x-a: 1\x002\r\n') },
  { name: 'a NUL in a name', bytes: CL('abc', 'x-\x00a: 1\r\n') },
  { name: 'a control byte in a value', bytes: CL('abc', 'x-a: \x01\r\n') },
  { name: 'DEL in a value', bytes: CL('abc', 'x-a: a\x7fb\r\n') },
  { name: 'a blank before the colon', bytes: CL('abc', 'x-a : 1\r\n') },
  { name: 'a field line without a colon', bytes: CL('abc', 'nocolon\r\n') },
  { name: 'an empty field name', bytes: CL('abc', ': 1\r\n') },
  { name: 'a head of 16 KiB', bytes: headOf(16 * 1024) },
  { name: 'a head of 16 KiB and a byte', bytes: headOf(16 * 1024 + 1) },
  { name: 'a head past 16 KiB', bytes: headOf(17 * 1024) },
  { name: 'a head cut short', bytes: 'HTTP/1.1 200 OK\r\ncontent-le' },
  // Framing fields that conflict.
  { name: 'Content-Length twice, the same', bytes: CL('abc', 'content-length: 3\r\n') },
  { name: 'Content-Length twice, different', bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 3\r\ncontent-length: 4\r\n\r\nabcd' },
  { name: 'Content-Length as a list', bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 3, 3\r\n\r\nabc' },
  { name: 'a negative Content-Length', bytes: 'HTTP/1.1 200 OK\r\ncontent-length: -3\r\n\r\nabc' },
  { name: 'Content-Length with a sign', bytes: 'HTTP/1.1 200 OK\r\ncontent-length: +3\r\n\r\nabc' },
  { name: 'Content-Length in hex', bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 0x3\r\n\r\nabc' },
  { name: 'Content-Length past 64 bits', bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 99999999999999999999\r\n\r\nabc' },
  {
    name: 'Content-Length and chunked',
    bytes: `HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
  },
  {
    name: 'chunked and Content-Length',
    bytes: `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
  },
  {
    name: 'chunked twice',
    bytes: `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
  },
  { name: 'chunked after gzip', bytes: `HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n` },
  // Bytes after an answer's end: they are no part of it.
  { name: 'a second answer after a Content-Length one', bytes: `${CL('abc')}${CL('de')}`, after: true },
  { name: 'garbage after a Content-Length one', bytes: `${CL('abc')}xyz`, after: true },
  { name: 'a second answer after a chunked one', bytes: `${CHUNKED_HEAD}3\r\nabc\r\n0\r\n\r\n${CL('de')}`, after: true },
  { name: 'garbage after a chunked one', bytes: `${CHUNKED_HEAD}3\r\nabc\r\n0\r\n\r\nxyz`, after: true },
  { name: 'a second answer after a 204', bytes: `HTTP/1.1 204 No Content\r\n\r\n${CL('de')}`, after: true },
  { name: 'a body after a 304', bytes: 'HTTP/1.1 304 Not Modified\r\ncontent-length: 3\r\n\r\nabc', after: true },
  { name: 'a body after the answer to a HEAD', bytes: CL('abc'), head: true, after: true },
];

/** What differs on purpose, by answer name: what each parser reads (only the properties named are checked). */
interface Difference {
  builtin: Partial<Reading>;
  /** llhttp on the reference line. */
  llhttp: Partial<Reading>;
  /** Lines whose llhttp reads it otherwise than the reference line's. */
  otherLines?: Partial<Record<number, Partial<Reading>>>;
  reason: string;
}

const DIFFERENCES: Record<string, Difference> = {
  'Content-Length of 16 digits': {
    builtin: { outcome: 'refused' },
    llhttp: { outcome: 'ended', body: 'abc' },
    reason: 'a length of at most 15 digits counts exactly in a number (below 2^53); the host sends no leading zeros',
  },
  'chunked, a size of 13 hex digits': {
    builtin: { outcome: 'broken' },
    llhttp: { outcome: 'ended', body: 'abc' },
    reason: 'a chunk size of at most 12 hex digits counts exactly in a number; the host sends no leading zeros',
  },
  'chunked, an extension past 1 KiB': {
    builtin: { outcome: 'broken' },
    llhttp: { outcome: 'ended', body: 'abc' },
    reason: "a chunk-size line is held to 1 KiB (llhttp's bound for extensions is 16 KiB); the host sends no extensions",
  },
  'chunked, blanks before an extension': {
    builtin: { outcome: 'ended', body: 'hello' },
    llhttp: { outcome: 'broken', body: '' },
    reason: 'RFC 9112 §7.1.1 allows blanks (BWS) around the ";" of an extension, which llhttp refuses',
  },
  '101 Switching Protocols, never asked for': {
    builtin: { outcome: 'refused' },
    llhttp: { outcome: 'none' },
    reason: "node:http gives a 101 to an 'upgrade' listener and, with none, drops the connection: no answer either way",
  },
  'the answer to a HEAD, no length': {
    builtin: { outcome: 'ended', keepAlive: true },
    llhttp: { outcome: 'ended', keepAlive: false },
    reason:
      'node:http decides on keep-alive before it says the request was a HEAD, so llhttp reads a missing length as a body to the close; the answer to a HEAD ends at its head (RFC 9112 §6.3), and its connection is kept',
  },
  'a transfer coding other than chunked': {
    builtin: { outcome: 'refused' },
    llhttp: { outcome: 'ended', body: 'abc', keepAlive: false },
    reason: 'the host applies no transfer coding but chunked: another is refused, not read to the close',
  },
  'chunked not the last transfer coding': {
    builtin: { outcome: 'refused' },
    llhttp: { outcome: 'ended', body: 'abc', keepAlive: false },
    reason: 'the host applies no transfer coding but chunked: another is refused, not read to the close',
  },
  'chunked twice': {
    builtin: { outcome: 'refused' },
    llhttp: { outcome: 'ended', body: 'abc' },
    reason: 'chunked is applied once at most (RFC 9112 §6.1); two Transfer-Encoding fields saying it are no answer of the host',
  },
  'chunked after gzip': {
    builtin: { outcome: 'refused' },
    llhttp: { outcome: 'ended', body: 'abc' },
    reason: 'the host applies no transfer coding but chunked: a gzip-coded body would go on as if it were plain',
  },
  'a status below 100': {
    builtin: { outcome: 'refused' },
    llhttp: { outcome: 'ended', status: 99 },
    reason: 'a status is three digits from 100 (RFC 9110 §15)',
  },
  'a head of 16 KiB and a byte': {
    builtin: { outcome: 'refused' },
    llhttp: { outcome: 'ended', status: 200 },
    reason: "the builtin parser counts every byte of a head, its line ends too; node:http's 16 KiB leaves some out (20 more bytes here)",
  },
};

/**
 * Past this length an answer is cut in two at every byte of its first and last EDGE bytes only, and at every
 * STRIDE-th byte between: what lies between is one long field value or extension, the same at every byte.
 */
const EDGE = 256;
const STRIDE = 61;

/** The ways to cut `bytes`: whole, in two at every byte (see EDGE), and a byte at a time. */
function feedings(bytes: Buffer): Buffer[][] {
  const cuts: Buffer[][] = [[bytes]];
  for (let at = 1; at < bytes.length; at++) {
    const edge = at <= EDGE || at >= bytes.length - EDGE;
    if (edge || at % STRIDE === 0) cuts.push([bytes.subarray(0, at), bytes.subarray(at)]);
  }
  cuts.push([...bytes].map((byte) => Buffer.from([byte])));
  return cuts;
}

/** A repeated name's values in an array, in order; names in lower case. */
function fieldsOf(raw: string[]): Fields {
  const fields: Fields = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    const had = fields[name];
    fields[name] = had === undefined ? raw[i + 1] : [...(typeof had === 'string' ? [had] : had), raw[i + 1]];
  }
  return fields;
}

/** What the builtin parser reads of `pieces`, then the connection's end; and whether it refused bytes past the answer. */
function builtinRead(pieces: Buffer[], headRequest: boolean): { reading: Reading; refusedPastEnd: boolean } {
  const reading: Reading = { outcome: 'none', body: '' };
  let ended = false;
  const parser = new HostResponseParser(
    {
      head(status, fields) {
        reading.status = status;
        reading.fields = { ...fields };
      },
      body(chunk) {
        reading.body += chunk.toString('latin1');
      },
      end(trailers) {
        ended = true;
        reading.trailers = { ...trailers };
      },
    },
    headRequest,
  );
  try {
    for (const piece of pieces) parser.feed(piece);
  } catch (err) {
    if (!(err instanceof HostProtocolError)) throw err;
    if (ended) return { reading: { ...reading, outcome: 'ended', keepAlive: parser.keepAlive }, refusedPastEnd: true };
    return { reading: { ...reading, outcome: reading.status === undefined ? 'refused' : 'broken' }, refusedPastEnd: false };
  }
  if (!ended) parser.close();
  if (ended) return { reading: { ...reading, outcome: 'ended', keepAlive: parser.keepAlive }, refusedPastEnd: false };
  return { reading: { ...reading, outcome: reading.status === undefined ? 'none' : 'cut' }, refusedPastEnd: false };
}

/**
 * What node:http's client (llhttp) reads of `pieces`, each one read of its socket, then the connection's end. The
 * socket is a Duplex in memory; the agent keeps connections alive, so the request's shouldKeepAlive is llhttp's.
 */
function llhttpRead(pieces: Buffer[], method: 'GET' | 'HEAD'): Promise<Reading> {
  return new Promise((resolve) => {
    const reading: Reading = { outcome: 'none', body: '' };
    let answer: IncomingMessage | undefined;
    let fed = false;
    let requestClosed = false;
    let answerClosed = false;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let socket: Duplex;
    let next = 0;
    const settle = () => {
      if (!fed || !requestClosed || (answer && !answerClosed)) return;
      agent.destroy();
      setImmediate(() => resolve(reading));
    };
    // One read of the socket each turn of the event loop: each piece is one parser.execute() of node:http.
    const feed = () => {
      if (socket.destroyed || next === pieces.length) {
        if (!socket.destroyed) socket.push(null);
        fed = true;
        return settle();
      }
      socket.push(pieces[next++]);
      setImmediate(feed);
    };
    agent.createConnection = () => {
      let started = false;
      socket = new Duplex({
        read() {},
        write(_chunk, _encoding, done) {
          done();
          if (!started) setImmediate(feed);
          started = true;
        },
      });
      // What the agent calls on a net.Socket.
      const stub = socket as unknown as Record<string, () => Duplex>;
      for (const method of ['setKeepAlive', 'setNoDelay', 'setTimeout', 'ref', 'unref']) stub[method] = () => socket;
      return socket;
    };
    const req = request({ agent, method, path: '/', headers: { host: 'host' } });
    req.on('response', (res: IncomingMessage) => {
      answer = res;
      reading.status = res.statusCode;
      reading.fields = fieldsOf(res.rawHeaders);
      const keepAlive = req.shouldKeepAlive;
      res.on('data', (chunk: Buffer) => (reading.body += chunk.toString('latin1')));
      res.on('end', () => {
        if (!res.complete) return;
        reading.outcome = 'ended';
        reading.trailers = fieldsOf(res.rawTrailers);
        reading.keepAlive = keepAlive;
      });
      res.on('error', () => {
        if (!res.complete && reading.outcome === 'none') reading.outcome = 'cut';
      });
      res.on('close', () => {
        answerClosed = true;
        if (!res.complete && reading.outcome === 'none') reading.outcome = 'cut';
        settle();
      });
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (answer?.complete) return; // bytes past the answer's end: no part of it
      const protocol = err.code?.startsWith('HPE_') ?? false;
      if (answer) reading.outcome = protocol ? 'broken' : 'cut';
      else reading.outcome = protocol ? 'refused' : 'none';
    });
    req.on('close', () => {
      requestClosed = true;
      settle();
    });
    req.end();
  });
}

describe('hostResponseParser against llhttp (node:http)', function () {
  this.timeout(60_000);

  it('lists differences only for answers of the corpus', function () {
    const names = new Set(CORPUS.map((answer) => answer.name));
    expect(names.size, 'names are unique').to.equal(CORPUS.length);
    expect(Object.keys(DIFFERENCES).filter((name) => !names.has(name))).to.deep.equal([]);
  });

  for (const answer of CORPUS) {
    const difference = DIFFERENCES[answer.name];
    const title = difference ? `${answer.name}: read otherwise on purpose` : answer.name;
    it(title, async function () {
      const bytes = Buffer.from(answer.bytes, 'latin1');
      const whole = builtinRead([bytes], answer.head === true).reading;
      for (const pieces of feedings(bytes)) {
        const cut = pieces.length === 1 ? 'whole' : pieces.length === 2 ? `cut at ${pieces[0].length}` : 'a byte at a time';
        const builtin = builtinRead(pieces, answer.head === true);
        const llhttp = await llhttpRead(pieces, answer.head ? 'HEAD' : 'GET');
        expect(builtin.reading, `builtin, ${cut}, as whole`).to.deep.equal(whole);
        expect(builtin.refusedPastEnd, `builtin refuses the bytes past the end, ${cut}`).to.equal(answer.after === true);
        if (!difference) {
          expect(builtin.reading, `builtin and llhttp, ${cut}`).to.deep.equal(llhttp);
          continue;
        }
        const expected = difference.otherLines?.[NODE_LINE] ?? difference.llhttp;
        expect(builtin.reading, `builtin, ${cut}`).to.deep.include(difference.builtin);
        expect(llhttp, `llhttp on Node ${NODE_LINE} (reference: ${REFERENCE_LINE}), ${cut}`).to.deep.include(expected);
        expect(builtin.reading, `still a difference, ${cut}`).not.to.deep.equal(llhttp);
      }
    });
  }
});
