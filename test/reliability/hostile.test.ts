// The hostile corpus (hostileCorpus.ts) against the real stack, byte for byte over raw sockets: every case
// is answered (or the connection closed) within 2 s, nothing from outside www/public leaks, no injected
// header comes back, no smuggled second request is served, and both processes stay up throughout.
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';
import { HOSTILE_CORPUS, SMUGGLED_PATH } from './hostileCorpus.ts';

const ANSWER_WITHIN_MS = 2_000;
const CONTROLLER_MARKER = 'CONTROLLER-SOURCE-MARKER-5b1e';
const GIT_MARKER = 'GIT-CONFIG-MARKER-77d0';
const KNOWN_BODY = 'known file\n';

interface RawReply {
  bytes: string;
  /** Neither an answer nor a close within the bound. */
  timedOut: boolean;
}

/** Sends `raw` on a fresh connection, half-closes, and collects everything until the server closes. */
function sendRaw(port: number, raw: string): Promise<RawReply> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let bytes = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ bytes, timedOut: true });
    }, ANSWER_WITHIN_MS);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (bytes += chunk));
    socket.on('error', () => {}); // a reset after the answer is fine: 'close' follows
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ bytes, timedOut: false });
    });
    socket.on('connect', () => socket.end(Buffer.from(raw, 'latin1')));
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
      const reply = await sendRaw(port, hostile.raw);
      expect(reply.timedOut, 'answered or closed within 2 s').to.equal(false);

      const statuses = statusesOf(reply.bytes);
      if (statuses.length === 0) expect(hostile.mayClose, `closed without an answer: ${JSON.stringify(reply.bytes)}`).to.equal(true);
      else expect(statuses[0], reply.bytes.slice(0, 300)).to.be.oneOf(hostile.expect);
      expect(statuses.length, 'responses on the connection').to.be.at.most(1);

      for (const leak of ['root:x:0:', CONTROLLER_MARKER, GIT_MARKER, '"name": "extqs"', sandbox.dir]) {
        expect(reply.bytes, 'bytes from outside www/public').not.to.contain(leak);
      }
      const names = headerNamesOf(reply.bytes);
      expect(names, 'injected headers echoed').not.to.include.members(['x-injected']);
      expect(names).not.to.include('x-injected');
      expect(names).not.to.include('set-cookie');
      const location = reply.bytes.match(/\r\nLocation: ([^\r]*)/i)?.[1];
      if (location !== undefined) expect(location, 'protocol-relative Location').to.match(/^\/(?![/\\])/);

      // The proxy still serves, and nothing smuggled reached the access log before this request's line.
      const after = await get(stack.url, `/known.txt?after=${i}`);
      expect(after.status).to.equal(200);
      expect(after.body).to.equal(KNOWN_BODY);
      const lines = await eventually(() => {
        const all = readLog(sandbox, 'access.log');
        return all.some((l) => l.includes(`/known.txt?after=${i} `)) ? all : undefined;
      }, 3000, 'the access line of the follow-up request');
      expect(lines.filter((l) => l.includes(SMUGGLED_PATH)), 'smuggled requests served').to.deep.equal([]);
      expect(stack.stderr(), 'launcher saw a child exit').not.to.match(/exited|restart/i);
    });
  });

  it('leaves the host pool and the proxy as they started (no child exited or restarted)', async function () {
    expect((await get(stack.url, '/External/Echo')).body).to.equal('echo ok');
    expect(stack.stderr()).not.to.match(/exited|restart/i);
    expect(readLog(sandbox, 'host.log').filter((l) => /Worker \d+ exited/.test(l))).to.deep.equal([]);
  });
});
