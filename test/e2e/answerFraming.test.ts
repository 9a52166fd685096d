// No client ever gets another's bytes (docs/design.md §6.1, "Who frames an answer"): a controller's Response
// whose body runs past its declared Content-Length, ends short of it, or names the fields that frame a
// connection, among ordinary requests on kept-alive connections, on the two engines. Every neighbour's body is
// checked byte for byte by three kinds of client (Node's agent, Python's http.client, a raw socket that pipelines:
// test/helpers/neighbourMix.ts); the failing answer's own client sees a cut (curl's exit 18), and host.log says why.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { WORKERS_PATH } from '../../common/protocol.ts';
import { FORWARDERS } from '../../common/settings.ts';
import { get, rawAnswerOnSocket } from '../helpers/http.ts';
import { MIX_CLIENTS, nodeMix, wrongNeighbours, type Outcome } from '../helpers/neighbourMix.ts';
import {
  descendants,
  eventually,
  holdController,
  makeSandbox,
  readLog,
  roleOf,
  startProxy,
  startStack,
  type Running,
  type Sandbox,
} from '../helpers/stack.ts';

/** What an overrunning answer carries past its length: a whole answer, which a reused connection would give another client. */
const SMUGGLED = 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 8\r\n\r\nSMUGGLED';

/** 4,096 bytes as declared, then a whole answer more, a moment later (so it goes in a piece of its own). */
const OVERRUN_CONTROLLER = `const smuggled = ${JSON.stringify(SMUGGLED)};
export default () => {
  const bytes = new TextEncoder();
  return new Response(new ReadableStream({
    async start(controller) {
      controller.enqueue(bytes.encode('x'.repeat(4096)));
      await new Promise((r) => setTimeout(r, 5));
      controller.enqueue(bytes.encode(smuggled));
      controller.close();
    },
  }), { headers: { 'content-type': 'text/plain', 'content-length': '4096' } });
};\n`;

/** A file the proxy compresses when asked (above its minimum length, a compressible type). */
const WORDS = 'every word the relay must carry as it is. '.repeat(200);

/** curl's exit code and what it wrote (the head with `-D -`), whatever the code. */
function curlExit(url: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('curl', ['--silent', ...args, url], { encoding: 'latin1' }, (err, stdout) =>
      resolve({ code: err ? Number((err as { code?: number }).code) : 0, out: stdout }),
    );
  });
}

/** The faulty outcomes, in order. */
const faultyOf = (outcomes: Outcome[]) => outcomes.filter(({ faulty }) => faulty);

for (const engine of FORWARDERS) {
  describe(`answer framing is the host's (--forwarder ${engine})`, function () {
    this.timeout(120_000);
    let sandbox: Sandbox;
    let stack: Running;

    before(async function () {
      sandbox = makeSandbox();
      writeFileSync(join(sandbox.controllers, 'Echo.ts'), `export default ({ query }) => 'echo ' + query.n;\n`);
      // 4,096 bytes as declared, then a whole answer more, a moment later (so it goes in a piece of its own).
      writeFileSync(join(sandbox.controllers, 'Overrun.ts'), OVERRUN_CONTROLLER);
      writeFileSync(
        join(sandbox.controllers, 'Short.ts'),
        `export default () => {
  const bytes = new TextEncoder();
  return new Response(new ReadableStream({
    async start(controller) {
      controller.enqueue(bytes.encode('y'.repeat(5000)));
      await new Promise((r) => setTimeout(r, 5));
      controller.close();
    },
  }), { headers: { 'content-type': 'text/plain', 'content-length': '8192' } });
};\n`,
      );
      writeFileSync(
        join(sandbox.controllers, 'Framed.ts'),
        `export default () => new Response('abc', { headers: { 'content-type': 'text/plain', connection: 'close', 'keep-alive': 'timeout=1', upgrade: 'h2c', trailer: 'x-late', te: 'trailers', 'transfer-encoding': 'chunked' } });\n`,
      );
      writeFileSync(join(sandbox.controllers, 'Relay.ts'), `export default ({ query }) => fetch(String(query.u));\n`);
      writeFileSync(
        join(sandbox.controllers, 'OwnGzip.ts'),
        `const gzipped = ${JSON.stringify([...gzipSync('gzipped by the controller')])};
export default () => new Response(new Uint8Array(gzipped), { headers: { 'content-type': 'text/plain', 'content-encoding': 'gzip' } });\n`,
      );
      // A file the proxy compresses when asked (above its minimum length, a compressible type).
      writeFileSync(join(sandbox.www, 'public', 'words.txt'), WORDS);
      stack = await startStack(sandbox, ['--forwarder', engine]);
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    const relayed = () => `Relay?u=${encodeURIComponent(`${stack.url}/words.txt`)}`;

    for (const [client, mix] of Object.entries(MIX_CLIENTS)) {
      it(`gives none of 1,000 neighbours of 100 overrunning answers a foreign or wrong body, and cuts each overrun (${client})`, async function () {
        const outcomes = await mix(stack.url, 'Overrun', 1100, 11, 16);
        expect(wrongNeighbours(outcomes)).to.deep.equal([]);
        expect(faultyOf(outcomes)).to.have.length(100);
        for (const outcome of faultyOf(outcomes)) {
          expect(outcome.cut, 'an overrun answer is cut').to.equal(true);
          expect(outcome.body.length).to.be.below(4096);
          expect(outcome.body).to.not.contain('SMUGGLED');
        }
      });
    }

    it('writes an error line naming the controller, the request id, the declared and the actual length', async function () {
      const reply = await curlExit(`${stack.url}/External/Overrun`, ['-D', '-', '--max-time', '5']);
      expect(reply.code, 'curl: partial file').to.equal(18);
      const id = /x-request-id: (\S+)/i.exec(reply.out)?.[1];
      expect(id).to.be.a('string');
      const line = await eventually(
        () => readLog(sandbox, 'host.log').find((l) => l.includes(id!) && l.includes('Content-Length')),
        5000,
        'the framing line',
      );
      expect(line).to.contain('Controller Overrun');
      expect(line).to.contain('declared Content-Length 4096 and its body ran past it (at least');
      expect(line).to.contain('the answer is cut and its connection closed');
    });

    it('ends an answer short of its declared length for its own client at once (curl exit 18)', async function () {
      const started = Date.now();
      // curl gives up with exit 28 past --max-time: an answer held open until a timeout fails here.
      const reply = await curlExit(`${stack.url}/External/Short`, ['--max-time', '1']);
      expect(reply.code, `curl after ${Date.now() - started} ms`).to.equal(18);
      await eventually(
        () =>
          readLog(sandbox, 'host.log').find(
            (l) => /answered in GET \/External\/Short/.test(l) && l.includes('its body ended after 5000 bytes'),
          ),
        5000,
        'the short body line',
      );
    });

    for (const [client, mix] of Object.entries(MIX_CLIENTS)) {
      it(`cuts each of 60 answers short of their length within 1 s of their head, 0 of 600 neighbours harmed (${client})`, async function () {
        const outcomes = await mix(stack.url, 'Short', 660, 11, 16);
        expect(wrongNeighbours(outcomes)).to.deep.equal([]);
        expect(faultyOf(outcomes)).to.have.length(60);
        for (const outcome of faultyOf(outcomes)) {
          expect(outcome.cut, 'a short answer is cut').to.equal(true);
          // Node's client does not say when the head came; the others do. A held answer would take 60 s.
          if (outcome.cutMs !== undefined) expect(outcome.cutMs).to.be.below(1000);
        }
      });
    }

    it('relays a fetch() of a compressed file with the body its fields describe', async function () {
      const one = await get(stack.url, `/External/${relayed()}`);
      expect(one.status).to.equal(200);
      expect(one.headers).to.not.have.property('content-encoding');
      if (one.headers['content-length'] !== undefined) expect(Number(one.headers['content-length'])).to.equal(Buffer.byteLength(WORDS));
      expect(one.body).to.equal(WORDS);
    });

    for (const [client, mix] of Object.entries(MIX_CLIENTS)) {
      it(`gives each of 60 relayed fetches the body its fields describe, 0 of 600 neighbours harmed (${client})`, async function () {
        const outcomes = await mix(stack.url, relayed(), 660, 11, 16);
        expect(wrongNeighbours(outcomes)).to.deep.equal([]);
        expect(faultyOf(outcomes)).to.have.length(60);
        for (const { status, body, cut, headers } of faultyOf(outcomes)) {
          expect({ status, body, cut }).to.deep.equal({ status: 200, body: WORDS, cut: false });
          expect(headers).to.not.have.property('content-encoding');
          if (headers['content-length'] !== undefined) expect(Number(headers['content-length'])).to.equal(WORDS.length);
        }
      });
    }

    it("sends a controller's own gzip bytes as they are, with its Content-Encoding", async function () {
      const reply = await curlExit(`${stack.url}/External/OwnGzip`, ['--compressed', '-D', '-']);
      expect(reply.code).to.equal(0);
      expect(reply.out).to.match(/content-encoding: gzip/i);
      expect(reply.out).to.match(/\r\n\r\ngzipped by the controller$/);
    });

    it('sends none of the fields that frame a connection from a controller, on the host socket and through the proxy', async function () {
      const socket = /on unix:(\S+host\.sock)/.exec(readLog(sandbox, 'host.log').join('\n'))?.[1];
      expect(socket, 'the host socket in host.log').to.be.a('string');
      const raw = await rawAnswerOnSocket(
        socket!,
        Buffer.from('GET /External/Framed HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'),
        5000,
      );
      const head = raw.slice(0, raw.indexOf('\r\n\r\n')).toLowerCase();
      // Its `connection: close` is the host's own answer to this request's; the controller's values are nowhere.
      expect(head).to.not.match(/^(keep-alive|upgrade|trailer|te):/m);
      expect(head).to.not.match(/^transfer-encoding/m);
      expect(head).to.match(/^content-length: 3$/m);
      expect(raw.slice(raw.indexOf('\r\n\r\n') + 4)).to.equal('abc');
      expect(wrongNeighbours(await nodeMix(stack.url, 'Framed', 110, 11, 4))).to.deep.equal([]);
    });
  });
}

describe('answer framing through the host primary (--worker-concurrency 1)', function () {
  this.timeout(120_000);
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Echo.ts'), `export default ({ query }) => 'echo ' + query.n;\n`);
    writeFileSync(join(sandbox.controllers, 'Overrun.ts'), OVERRUN_CONTROLLER);
    // A bounded concurrency sends every request through the primary's relay (host/pool/dispatcher.ts).
    stack = await startStack(sandbox, ['--worker-concurrency', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('gives none of 300 neighbours of 30 overrunning answers a foreign or wrong body', async function () {
    const outcomes = await nodeMix(stack.url, 'Overrun', 330, 11, 16);
    expect(wrongNeighbours(outcomes)).to.deep.equal([]);
    for (const outcome of faultyOf(outcomes)) expect(outcome.cut, 'an overrun answer is cut').to.equal(true);
  });
});

describe('the proxy and many requests held at once', function () {
  this.timeout(120_000);
  let sandbox: Sandbox;

  beforeEach(function () {
    sandbox = makeSandbox();
  });

  afterEach(function () {
    sandbox?.remove();
  });

  for (const engine of FORWARDERS) {
    it(`answers fast requests while 1,500 requests are held in an await (--forwarder ${engine})`, async function () {
      // 1,500 client connections and as many to the host: this machine's hard limit on open files (20,000 here,
      // `ulimit -Hn`) must allow about 3,200 in the proxy; Node raises its soft limit to the hard one at start.
      const held = holdController(sandbox, 'Held');
      writeFileSync(join(sandbox.controllers, 'Fast.ts'), `export default () => 'fast';\n`);
      // One worker: every held call is on the process the fast ones need.
      const stack = await startStack(sandbox, ['--forwarder', engine, '--workers', '1']);
      try {
        const holding = Array.from({ length: 1500 }, () => get(stack.url, '/External/Held', { timeoutMs: 120_000 }));
        await held.reached(60_000, 1500);
        // Held until released: a fast request that queued behind them would never be answered before that.
        for (let i = 0; i < 5; i++) {
          const reply = await get(stack.url, '/External/Fast', { timeoutMs: 10_000 });
          expect(reply).to.include({ status: 200, body: 'fast' });
        }
        held.release();
        const answers = await Promise.all(holding);
        expect(answers.filter((a) => a.status !== 200 || a.body !== 'released')).to.deep.equal([]);
      } finally {
        held.release();
        await stack.stop();
      }
    });
  }

  it('answers 503 with a line naming the open-files limit when the proxy runs out of descriptors, and serves again after', async function () {
    const held = holdController(sandbox, 'Held');
    writeFileSync(join(sandbox.controllers, 'Fast.ts'), `export default () => 'fast';\n`);
    const stack = await startStack(sandbox, ['--workers', '1']);
    try {
      const proxyPid = descendants(stack.child.pid!).find((pid) => roleOf(pid) === 'proxy')!;
      // The running proxy's limit lowered (util-linux prlimit): each held request takes two descriptors there.
      await promisify(execFile)('prlimit', ['--pid', String(proxyPid), '--nofile=160:160']);
      const holding = Array.from({ length: 120 }, () =>
        get(stack.url, '/External/Held', { timeoutMs: 60_000 }).catch((err: Error) => ({ status: 0, body: err.message, headers: {} })),
      );
      const refused = await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.includes('out of file descriptors')),
        30_000,
        'the out-of-descriptors line',
      );
      expect(refused).to.match(
        /\[proxy:error\] .*\(24\)Too many open files: .*could not connect to upstream .* for \/External\/Held: this process is out of file descriptors \(limit 160\); raise the limit \(ulimit -n, or LimitNOFILE= under systemd\)/,
      );
      held.release();
      const answers = await Promise.all(holding);
      const statuses = new Set(answers.map((a) => a.status));
      expect(statuses.has(503), `statuses ${[...statuses].join(', ')}`).to.equal(true);
      expect(answers.filter((a) => a.status !== 503 && a.status !== 0 && a.status !== 200)).to.deep.equal([]);
      // The same proxy, its descriptors back: it serves.
      expect(await get(stack.url, '/External/Fast')).to.include({ status: 200, body: 'fast' });
      expect(roleOf(proxyPid)).to.equal('proxy');
    } finally {
      held.release();
      await stack.stop();
    }
  });
});

describe('the builtin engine and a host that writes past the end of an answer', function () {
  let sandbox: Sandbox;
  let proxy: Running;
  let server: Server;
  let connections = 0;

  before(async function () {
    sandbox = makeSandbox();
    // Not extqs's host (which never does this, design §6.1): a server that sends each answer with a second one after it, in one write.
    server = createServer((socket) => {
      connections += 1;
      let head = '';
      socket.on('data', (chunk: Buffer) => {
        head += chunk.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        const workersTable = head.startsWith(`GET ${WORKERS_PATH}`);
        head = '';
        if (workersTable) return void socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
        socket.write(`HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nmineHTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\nforeign`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    proxy = await startProxy(sandbox, ['--upstream', `http://127.0.0.1:${port}`, '--forwarder', 'builtin']);
  });

  after(async function () {
    await proxy?.stop();
    server?.close();
    sandbox?.remove();
  });

  it('gives each client its own answer, closes the connection and says so, and opens a new one for the next request', async function () {
    const before = connections;
    for (let i = 0; i < 3; i++) expect(await get(proxy.url, '/External/Anything')).to.include({ status: 200, body: 'mine' });
    expect(connections - before, 'a connection for each request').to.equal(3);
    const lines = await eventually(
      () => {
        const found = readLog(sandbox, 'error.log').filter((l) =>
          l.includes('sent bytes past the end of its answer to /External/Anything'),
        );
        return found.length >= 3 ? found : undefined;
      },
      5000,
      'three past-the-end lines',
    );
    expect(lines[0]).to.match(
      /\[proxy:error\] .*upstream http:\/\/127\.0\.0\.1:\d+ sent bytes past the end of its answer to \/External\/Anything: its connection is closed/,
    );
  });
});
