// The hostile corpus (hostileCorpus.ts) against the real stack, byte for byte over raw sockets: every case
// is answered (or the connection closed) within 2 s, nothing from outside www/public leaks, no injected
// header comes back, no smuggled second request is served, and both processes stay up throughout.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';
import { HOSTILE_CORPUS, SMUGGLED_PATH } from './hostileCorpus.ts';

const ANSWER_WITHIN_MS = 2_000;
/** A bound, not a speed check: the sentinel is an ordinary request. */
const SENTINEL_WITHIN_MS = 5_000;
const CONTROLLER_MARKER = 'CONTROLLER-SOURCE-MARKER-5b1e';
const GIT_MARKER = 'GIT-CONFIG-MARKER-77d0';
const OUTSIDE_MARKER = 'OUTSIDE-CONTROLLER-RAN-3a9c';
const KNOWN_BODY = 'known file\n';

interface RawReply {
  bytes: string;
  /** Neither a complete answer nor a close within the bound. */
  timedOut: boolean;
  /** The first answer was complete with the connection open, so a sentinel request followed on it. */
  sentinel: boolean;
}

/** Where the first final (non-1xx) response in `bytes` ends; undefined while incomplete or when it ends at close. */
function endOfFirstResponse(bytes: string): number | undefined {
  let start = 0;
  for (let i = 0; i < 5; i++) {
    const headEnd = bytes.indexOf('\r\n\r\n', start);
    if (headEnd === -1) return undefined;
    const head = bytes.slice(start, headEnd);
    const bodyStart = headEnd + 4;
    if (/^HTTP\/1\.[01] 1\d\d /.test(head)) {
      start = bodyStart;
      continue;
    }
    if (/\r\nconnection: *close/i.test(head)) return undefined;
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (length) return bytes.length >= bodyStart + Number(length[1]) ? bodyStart + Number(length[1]) : undefined;
    if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      const last = bytes.indexOf('\r\n0\r\n\r\n', bodyStart - 2); // no trailers from this server
      return last === -1 ? undefined : last + 7;
    }
    return undefined;
  }
  return undefined;
}

/**
 * Sends `raw` on a fresh connection. Once the first answer is complete on a connection still open, a
 * sentinel request (Connection: close) follows on it: every response before the sentinel's belongs to the
 * hostile bytes, so a smuggled second request would show as an extra one. Collects until the server closes.
 */
function sendRaw(port: number, raw: string, sentinel: string): Promise<RawReply> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let bytes = '';
    let sentinelSent = false;
    const finish = (timedOut: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ bytes, timedOut, sentinel: sentinelSent });
    };
    let timer = setTimeout(() => finish(true), ANSWER_WITHIN_MS);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      bytes += chunk;
      if (!sentinelSent && endOfFirstResponse(bytes) !== undefined) {
        sentinelSent = true;
        clearTimeout(timer);
        timer = setTimeout(() => finish(true), SENTINEL_WITHIN_MS);
        socket.write(sentinel);
      }
    });
    socket.on('error', () => {}); // a reset after the answer is fine: 'close' follows
    socket.on('close', () => finish(false));
    socket.on('connect', () => socket.write(Buffer.from(raw, 'latin1')));
  });
}

/** Status codes of every response in the reply (a second one would be a served smuggled request). */
function statusesOf(bytes: string): number[] {
  return [...bytes.matchAll(/HTTP\/1\.[01] ([2-5]\d\d) /g)].map((m) => Number(m[1]));
}

function headerNamesOf(bytes: string): string[] {
  const end = bytes.indexOf('\r\n\r\n');
  return (end === -1 ? bytes : bytes.slice(0, end))
    .split('\r\n')
    .slice(1)
    .map((line) => line.slice(0, line.indexOf(':')).trim().toLowerCase());
}

describe('hostile requests (raw sockets, corpus of public payloads)', function () {
  let sandbox: Sandbox;
  let stack: Running;
  let port: number;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.publicDir, 'index.html'), '<h1>extqs</h1>\n');
    writeFileSync(join(sandbox.publicDir, 'known.txt'), KNOWN_BODY);
    mkdirSync(join(sandbox.publicDir, 'docs'));
    writeFileSync(join(sandbox.publicDir, 'docs', 'index.html'), 'docs\n');
    mkdirSync(join(sandbox.publicDir, '.git'));
    writeFileSync(join(sandbox.publicDir, '.git', 'config'), `[core] ${GIT_MARKER}\n`);
    mkdirSync(join(sandbox.publicDir, 'evil.example', 'dir'), { recursive: true });
    writeFileSync(join(sandbox.publicDir, 'evil.example', 'dir', 'index.html'), 'dir\n');
    writeFileSync(join(sandbox.controllers, 'Secret.ts'), `// ${CONTROLLER_MARKER}\nexport default () => 'secret ran';\n`);
    writeFileSync(join(sandbox.controllers, 'Echo.ts'), `export default () => 'echo ok';\n`);
    // Two levels above www/public, where /../../package.json would land.
    writeFileSync(join(sandbox.dir, 'package.json'), '{ "name": "extqs", "version": "0.0.0" }\n');
    // Links out of both roots, which the default --follow-symlinks owner must not follow.
    symlinkSync('/etc/passwd', join(sandbox.publicDir, 'p.txt'));
    symlinkSync('/etc', join(sandbox.publicDir, 'etc-link'));
    symlinkSync('..', join(sandbox.publicDir, 'up'));
    mkdirSync(join(sandbox.dir, 'elsewhere'));
    writeFileSync(join(sandbox.dir, 'elsewhere', 'Outside.ts'), `export default () => '${OUTSIDE_MARKER}';\n`);
    symlinkSync(join(sandbox.dir, 'elsewhere', 'Outside.ts'), join(sandbox.controllers, 'Outside.ts'));
    stack = await startStack(sandbox);
    port = Number(new URL(stack.url).port);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('holds at least 60 cases, each with its source', function () {
    expect(HOSTILE_CORPUS.length).to.be.at.least(60);
    for (const c of HOSTILE_CORPUS) expect(c.source, c.name).to.have.length.above(5);
    expect(new Set(HOSTILE_CORPUS.map((c) => c.name)).size).to.equal(HOSTILE_CORPUS.length);
  });

  HOSTILE_CORPUS.forEach((hostile, i) => {
    it(`${hostile.name} [${hostile.source}]`, async function () {
      const reply = await sendRaw(
        port,
        hostile.raw,
        `GET /known.txt?sentinel=${i} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
      );
      expect(reply.timedOut, 'answered or closed within 2 s').to.equal(false);

      const statuses = statusesOf(reply.bytes);
      if (statuses.length === 0) expect(hostile.mayClose, `closed without an answer: ${JSON.stringify(reply.bytes)}`).to.equal(true);
      else expect(statuses[0], reply.bytes.slice(0, 300)).to.be.oneOf(hostile.expect);
      // With a sentinel: the hostile answer, then the sentinel's 200 (a smuggled request would add one between).
      if (reply.sentinel) {
        expect(statuses.length, `responses on the connection: ${statuses.join(', ')}`).to.equal(2);
        expect(statuses[1]).to.equal(200);
        expect(reply.bytes.endsWith(KNOWN_BODY), 'the sentinel answered last').to.equal(true);
      } else expect(statuses.length, 'responses on the connection').to.be.at.most(1);

      for (const leak of ['root:x:0:', CONTROLLER_MARKER, GIT_MARKER, OUTSIDE_MARKER, '"name": "extqs"', sandbox.dir]) {
        expect(reply.bytes, 'bytes from outside www/public').not.to.contain(leak);
      }
      // Every error is Apache's page: fastify's own JSON errors never come through.
      expect(reply.bytes, "the host framework's error").not.to.match(/FST_ERR|"statusCode":\s*\d/);
      const names = headerNamesOf(reply.bytes);
      expect(names).not.to.include('x-injected');
      expect(names).not.to.include('set-cookie');
      const location = reply.bytes.match(/\r\nLocation: ([^\r]*)/i)?.[1];
      if (location !== undefined) expect(location, 'protocol-relative Location').to.match(/^\/(?![/\\])/);

      // The proxy still serves, and nothing smuggled reached the access log before this request's line.
      const after = await get(stack.url, `/known.txt?after=${i}`);
      expect(after.status).to.equal(200);
      expect(after.body).to.equal(KNOWN_BODY);
      const lines = await eventually(
        () => {
          const all = readLog(sandbox, 'access.log');
          return all.some((l) => l.includes(`/known.txt?after=${i} `)) ? all : undefined;
        },
        3000,
        'the access line of the follow-up request',
      );
      expect(
        lines.filter((l) => l.includes(SMUGGLED_PATH)),
        'smuggled requests served',
      ).to.deep.equal([]);
      expect(stack.stderr(), 'launcher saw a child exit').not.to.match(/exited|restart/i);
    });
  });

  describe('when a request fails inside its body', function () {
    const bodies: Record<string, string> = {
      'a chunk size line ended by LF alone': '5\nhello\r\n0\r\n\r\n',
      'chunk data ended by LF alone': '5\r\nhello\n0\r\n\r\n',
      'a trailer carrying Content-Length': '5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n',
    };
    Object.entries(bodies).forEach(([what, body], i) => {
      it(`answers ${what} with Apache's 400, and logs the 400 and why`, async function () {
        const target = `/External/Echo?bad-body=${i}`;
        const reply = await sendRaw(
          port,
          `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n${body}`,
          'GET /known.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
        );
        expect(statusesOf(reply.bytes)).to.deep.equal([400]);
        expect(reply.bytes).to.contain('<title>400 Bad Request</title>');
        const id = /\r\nX-Request-Id: ([^\r]+)/i.exec(reply.bytes)?.[1];
        const line = await eventually(() => readLog(sandbox, 'access.log').find((l) => l.includes(`"POST ${target} HTTP/1.1"`)));
        expect(line).to.match(/" 400 \d+ /);
        const why = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.endsWith(`request_id: ${id}`)));
        expect(why).to.match(/\[core:info\] .*\[client 127\.0\.0\.1:\d+\] Bad request: HPE_/);
      });
    });
  });

  it('leaves the host pool and the proxy as they started (no child exited or restarted)', async function () {
    expect((await get(stack.url, '/External/Echo')).body).to.equal('echo ok');
    expect(stack.stderr()).not.to.match(/exited|restart/i);
    expect(readLog(sandbox, 'host.log').filter((l) => /Worker \d+ exited/.test(l))).to.deep.equal([]);
  });
});
