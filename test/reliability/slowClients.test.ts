// Slow and oversized clients against the real stack: 500 slowloris connections are cut at the header
// timeout while ordinary requests go on being answered; an over-large head gets 431, too many header
// fields 400 (Apache's LimitRequestFieldSize / LimitRequestFields).
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const SLOW_CONNECTIONS = 500;
const HEADER_TIMEOUT_S = 3;
/** One header byte every this many ms: far slower than any real client, fast enough to keep a naive server waiting. */
const TRICKLE_MS = 1_000;

/** This process's soft limit on open files (Node raises it to the hard limit at start-up). */
function openFileLimit(): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  return Number(line?.split(/\s+/)[3] ?? 0);
}

interface SlowClient {
  socket: Socket;
  received: string;
  closedAt: number | undefined;
}

/** Sends the start of a request head, then one byte of an endless header field per TRICKLE_MS. */
function slowloris(port: number): Promise<SlowClient> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const client: SlowClient = { socket, received: '', closedAt: undefined };
    let trickle: NodeJS.Timeout | undefined;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (client.received += chunk));
    socket.on('error', () => {}); // a reset after the 408 is expected; 'close' records the end
    socket.on('close', () => {
      clearInterval(trickle);
      client.closedAt = Date.now();
    });
    socket.once('connect', () => {
      socket.write('GET /External/Latest?sn=123&no=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      trickle = setInterval(() => socket.writable && socket.write('a'), TRICKLE_MS);
      resolve(client);
    });
    socket.once('error', reject);
  });
}

describe('slow and oversized clients', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let stack: Running;
  let port: number;

  before(async function () {
    // 500 sockets here, 500 in the proxy: well inside any limit Node runs with, but say so if not.
    const limit = openFileLimit();
    if (limit < SLOW_CONNECTIONS * 2 + 200)
      throw new Error(`this test needs ${SLOW_CONNECTIONS * 2 + 200} open files, the limit is ${limit} (ulimit -n)`);
    sandbox = makeSandbox();
    stack = await startStack(sandbox, ['--header-timeout', String(HEADER_TIMEOUT_S), '--request-timeout', String(HEADER_TIMEOUT_S + 2)]);
    port = Number(new URL(stack.url).port);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  describe('when 500 slowloris connections trickle a request head', function () {
    let slow: SlowClient[] = [];
    const ordinary: { status: number; slowOpen: number }[] = [];
    let attackStartedAt = 0;

    before(async function () {
      attackStartedAt = Date.now();
      slow = await Promise.all(Array.from({ length: SLOW_CONNECTIONS }, () => slowloris(port)));
      const open = () => slow.filter((c) => c.closedAt === undefined).length;
      // Ordinary requests, one after another, until every slow connection is gone (bounded in count and time).
      for (let i = 0; i < 400 && open() > 0 && Date.now() - attackStartedAt < 30_000; i++) {
        const path = i % 2 === 0 ? '/favicon.ico' : '/External/Latest?sn=123&no=1';
        const reply = await get(stack.url, path);
        ordinary.push({ status: reply.status, slowOpen: open() });
        await new Promise((r) => setTimeout(r, 50));
      }
    });

    after(function () {
      for (const c of slow) c.socket.destroy();
    });

    it('goes on answering ordinary requests while the slow connections are open', function () {
      expect(ordinary.length).to.be.greaterThan(0);
      expect(ordinary.filter((r) => r.status !== 404 && r.status !== 500)).to.deep.equal([]);
      // Answered under attack, not only after it: most slow connections were still open for these.
      expect(ordinary.filter((r) => r.slowOpen > SLOW_CONNECTIONS / 2).length).to.be.greaterThan(3);
    });

    it('cuts every slow connection at the header timeout with a 408', function () {
      expect(slow.filter((c) => c.closedAt === undefined)).to.have.length(0);
      expect(slow.filter((c) => !c.received.startsWith('HTTP/1.1 408 Request Timeout\r\n'))).to.have.length(0);
      // Cut at the limit (checked every second), not at Node's default sweep of 30 s.
      const latest = Math.max(...slow.map((c) => c.closedAt! - attackStartedAt));
      expect(latest).to.be.below((HEADER_TIMEOUT_S + 10) * 1000);
    });

    it('logs each cut connection in error.log', async function () {
      await eventually(
        () =>
          readLog(sandbox, 'error.log').filter((l) => l.includes('ERR_HTTP_REQUEST_TIMEOUT')).length >= SLOW_CONNECTIONS ? true : undefined,
        5000,
        '500 timeout lines',
      );
    });
  });

  describe('when a body is still arriving and the host has already answered (slowhttptest -B found this)', function () {
    // The retired undici engine dropped the unsent body by setting req.socket to null; the access log read it
    // afterwards and the proxy crashed (TypeError), once per such request.
    it('forwards the answer, logs the request with its client, and stays up', async function () {
      // Longer than the host reads before it takes a worker (64 KiB, host/pool/dispatcher.ts), so it answers early.
      const socket = connect(port, '127.0.0.1');
      let received = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (received += chunk));
      socket.on('error', () => {});
      socket.write(
        'POST /External/Latest?sn=123&no=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\na=1',
      );
      try {
        await eventually(() => (received.includes('\r\n\r\n') ? true : undefined), 5000, 'the answer to the slow POST');
      } finally {
        socket.destroy();
      }
      expect(received).to.match(/^HTTP\/1\.1 500 /);
      await eventually(
        () =>
          readLog(sandbox, 'access.log').some((l) => /^127\.0\.0\.1 .*"POST \/External\/Latest\?sn=123&no=1 HTTP\/1\.1" 500 /.test(l))
            ? true
            : undefined,
        3000,
        'the POST in access.log',
      );
      expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
      expect(stack.stderr()).to.not.contain('proxy (pid');
    });
  });

  describe('when the request head is over --max-header-size (default 16384 bytes)', function () {
    it('answers 431 and logs it', async function () {
      const reply = await get(stack.url, '/favicon.ico', { headers: { 'X-Big': 'a'.repeat(20_000) } });
      expect(reply.status).to.equal(431);
      await eventually(
        () => (readLog(sandbox, 'error.log').some((l) => l.includes('HPE_HEADER_OVERFLOW')) ? true : undefined),
        3000,
        'the overflow line',
      );
    });

    it('still accepts an 8 KB field, as Apache does (LimitRequestFieldSize 8190)', async function () {
      const reply = await get(stack.url, '/favicon.ico', { headers: { 'X-Big': 'a'.repeat(8_000) } });
      expect(reply.status).to.equal(404);
    });
  });

  describe('when a request has more header fields than --max-header-fields (default 100)', function () {
    const fields = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-Field-${i}`, String(i)]));

    it('answers 400 with the error page and logs the limit', async function () {
      // Node's client sends Host and Connection after these, where a field limit that truncates would drop them.
      const reply = await get(stack.url, '/favicon.ico', { headers: fields(101) });
      expect(reply.status).to.equal(400);
      expect(reply.headers.connection).to.equal('close');
      expect(reply.body).to.contain('<title>400 Bad Request</title>');
      await eventually(
        () => (readLog(sandbox, 'error.log').some((l) => l.includes("exceeds this server's limit (100)")) ? true : undefined),
        3000,
        'the limit line',
      );
    });

    it('accepts 100 fields (Host and Connection included)', async function () {
      const reply = await get(stack.url, '/favicon.ico', { headers: fields(98) });
      expect(reply.status).to.equal(404);
    });
  });
});

describe('with keep-alive off (--keep-alive-timeout 0) and a connection cap (--max-connections 2, two proxy workers)', function () {
  let sandbox: Sandbox;
  let stack: Running;
  let port: number;
  const held: Socket[] = [];

  before(async function () {
    sandbox = makeSandbox();
    // Two proxy workers, each with its share of the cap (one connection): the cap holds over both.
    stack = await startStack(sandbox, ['--keep-alive-timeout', '0', '--max-connections', '2', '--proxy-workers', '2']);
    port = Number(new URL(stack.url).port);
  });

  after(async function () {
    for (const socket of held) socket.destroy();
    await stack?.stop();
    sandbox?.remove();
  });

  /** Opens a connection, sends `request` if given, and resolves with what came back once the server closed it. */
  function exchange(request?: string): { socket: Socket; closed: Promise<string> } {
    const socket = connect(port, '127.0.0.1', () => request && socket.write(request));
    socket.on('error', () => {}); // a refused connection may be reset; 'close' settles it
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    return { socket, closed: new Promise((resolve) => socket.once('close', () => resolve(received))) };
  }

  it('answers an HTTP/1.1 request and closes the connection (to Node, 0 would mean never time out)', async function () {
    const reply = await exchange('GET /favicon.ico HTTP/1.1\r\nHost: x\r\n\r\n').closed;
    expect(reply).to.match(/^HTTP\/1\.1 404 Not Found\r\n/);
    expect(reply).to.match(/\r\nConnection: close\r\n/i);
  });

  it('refuses a third connection while two are open, and serves again once one goes', async function () {
    for (let i = 0; i < 2; i++) {
      const { socket } = exchange();
      await new Promise((resolve) => socket.once('connect', resolve));
      held.push(socket);
    }
    // Connected sockets count once the proxy has accepted them: wait until a third is refused.
    const refused = await eventually(
      async () => ((await exchange('GET /favicon.ico HTTP/1.1\r\nHost: x\r\n\r\n').closed) === '' ? true : undefined),
      3000,
      'a refused connection',
    );
    expect(refused).to.equal(true);
    held.pop()!.destroy();
    const reply = await eventually(
      async () => {
        const answer = await exchange('GET /favicon.ico HTTP/1.1\r\nHost: x\r\n\r\n').closed;
        return answer === '' ? undefined : answer;
      },
      3000,
      'a served connection',
    );
    expect(reply).to.match(/^HTTP\/1\.1 404 Not Found\r\n/);
  });
});

describe('a client that trickles a body after its answer (lingering close, docs/design.md §3.1)', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    // --request-timeout 60 (the default) would let the body go on for a minute: the lingering ends it first.
    stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('is closed 30 s after the answer, however steadily it sends', async function () {
    const socket = connect({ port: Number(new URL(stack.url).port), host: '127.0.0.1', allowHalfOpen: true });
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', () => {}); // its writes after the close are reset
    const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
    // 1 GB declared; the 405 comes at once, then a byte every TRICKLE_MS, inside the 5 s idle limit.
    socket.write('POST /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000000\r\n\r\na');
    await eventually(() => (received.includes('\r\n\r\n') ? true : undefined), 5000, 'the answer');
    const answeredAt = Date.now();
    const trickle = setInterval(() => socket.write('a'), TRICKLE_MS);
    try {
      const lingered =
        (await Promise.race([closed, new Promise<number>((resolve) => setTimeout(() => resolve(NaN), 40_000))])) - answeredAt;
      expect(received).to.match(/^HTTP\/1\.1 405 /);
      expect(received).to.match(/^Connection: close\r$/m);
      expect(lingered, 'ms from the answer to the close').to.be.within(29_000, 33_000);
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
  });
});
