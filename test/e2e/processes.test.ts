// The processes as an operator meets them: the host on its own, the proxy with no host behind it,
// start-up validation, crash recovery, graceful stop, the shipped examples, and npm start stopped by SIGTERM.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { expect } from 'chai';
import { parseReadyUrls } from '../../common/ready.ts';
import { get } from '../helpers/http.ts';
import {
  callMarker,
  descendants,
  eventually,
  makeSandbox,
  readLog,
  ROOT,
  slowController,
  spawnReady,
  startProcess,
  startStack,
  type Running,
  type Sandbox,
} from '../helpers/stack.ts';

describe('the host process on its own', function () {
  let sandbox: Sandbox;
  let host: Running;

  before(async function () {
    sandbox = makeSandbox();
    host = await startProcess('host', ['--www', sandbox.www, '--logs', sandbox.logs, '--socket', join(sandbox.dir, 'host.sock')]);
  });

  after(async function () {
    await host?.stop();
    sandbox?.remove();
  });

  it('prints its ready line with a 0600 unix socket', async function () {
    expect(host.url).to.equal(`unix:${join(sandbox.dir, 'host.sock')}`);
    const { statSync } = await import('node:fs');
    expect(statSync(join(sandbox.dir, 'host.sock')).mode & 0o777).to.equal(0o600);
  });
});

describe('start-up validation', function () {
  let sandbox: Sandbox;
  before(() => (sandbox = makeSandbox()));
  after(() => sandbox.remove());

  const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    spawnSync(process.execPath, ['bin/extqs.js', 'start', ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      encoding: 'utf8',
      timeout: 30_000,
    });

  it('stops on a bad --port, naming the setting, the value and what is allowed', function () {
    const result = run(['--port', '80a', '--www', sandbox.www, '--logs', sandbox.logs]);
    expect(result.status).to.equal(2);
    expect(result.stderr).to.contain('--port (EXTQS_PORT) must be an integer from 0 to 65535, got "80a"');
  });

  it('stops on a bad PORT from the environment', function () {
    const result = run(['--www', sandbox.www, '--logs', sandbox.logs], { PORT: '70000' });
    expect(result.status).to.equal(2);
    expect(result.stderr).to.contain('got "70000"');
  });

  it('lets a flag win over a bad variable of the same setting: the stack starts, answers through the proxy and the host, and no process has exited', async function () {
    const own = makeSandbox(); // its error.log holds this stack's lines only
    writeFileSync(join(own.controllers, 'Ping.ts'), `export default () => 'pong';\n`);
    // Every child inherits the launcher's environment, bad variables included.
    const stack = await spawnReady(
      ['bin/extqs.js', 'start', '--port', '0', '--listen', '127.0.0.1', '--www', own.www, '--logs', own.logs],
      { PORT: 'abc', LISTEN: 'nope' },
    );
    try {
      expect(new URL(stack.url).hostname).to.equal('127.0.0.1');
      // A static answer from the proxy, a controller's from the host: each on a new connection, which the
      // proxy's primary hands to its workers in turn.
      for (let i = 0; i < 4; i++) {
        expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
        expect((await get(stack.url, '/External/Ping')).body).to.equal('pong');
      }
      expect(stack.stderr()).not.to.match(/exited|restart/);
      expect(readLog(own, 'error.log').filter((l) => /exited|:error\]/.test(l))).to.deep.equal([]);
    } finally {
      await stack.stop();
      own.remove();
    }
  });

  it('stops on a www directory without controllers/', function () {
    const result = run(['--port', '0', '--www', sandbox.logs, '--logs', sandbox.logs]);
    expect(result.status).to.equal(2);
    expect(result.stderr).to.contain('--www (EXTQS_WWW_ROOT) must be a directory holding public/ and controllers/');
  });

  it('stops with a clear message when the port is taken', async function () {
    const first = await startStack(sandbox);
    try {
      const port = new URL(first.url).port;
      const result = run(['--port', port, '--listen', '127.0.0.1', '--www', sandbox.www, '--logs', sandbox.logs]);
      expect(result.status).to.equal(1);
      // One proxy process binds in listen(); the primary of several proxy workers in its cluster's bind().
      expect(result.stderr).to.match(/extqs proxy: cannot listen: (listen|bind) EADDRINUSE/);
      expect(result.stderr).to.contain('proxy exited with code 1 before it was ready');
    } finally {
      await first.stop();
    }
  });
});

describe('a running stack under faults and signals', function () {
  let sandbox: Sandbox;
  let stack: Running;

  beforeEach(async function () {
    sandbox = makeSandbox();
    stack = await startStack(sandbox);
  });

  afterEach(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  const hostPids = () =>
    readLog(sandbox, 'host.log')
      .flatMap((l) => /Host pool (\d+) serving/.exec(l)?.[1] ?? [])
      .map(Number);

  it('restarts a host killed with SIGKILL, and serves again', async function () {
    writeFileSync(join(sandbox.controllers, 'Ping.ts'), `export default () => 'pong';\n`);
    expect((await get(stack.url, '/External/Ping')).body).to.equal('pong');
    const [pid] = await eventually(() => (hostPids().length ? hostPids() : undefined), 3000, 'host pid in host.log');
    process.kill(pid, 'SIGKILL');
    const newPid = await eventually(() => hostPids().find((p) => p !== pid), 10_000, 'a new host');
    expect(newPid).to.not.equal(pid);
    await eventually(async () => ((await get(stack.url, '/External/Ping')).body === 'pong' ? true : undefined), 5000, 'service again');
    expect(stack.stderr()).to.match(/host \(pid \d+\) exited with signal SIGKILL; restarting in \d+ ms/);
  });

  it('restarts a proxy killed with SIGKILL on the same port, and serves again', async function () {
    const proxyPid = () =>
      readLog(sandbox, 'error.log')
        .flatMap((l) => /extqs proxy (\d+) configured/.exec(l)?.[1] ?? [])
        .map(Number);
    const [pid] = await eventually(() => (proxyPid().length ? proxyPid() : undefined), 3000, 'proxy pid in error.log');
    process.kill(pid, 'SIGKILL');
    await eventually(() => proxyPid().find((p) => p !== pid), 10_000, 'a new proxy');
    // The same URL as the first ready line (the test asked for --port 0).
    await eventually(
      async () => ((await get(stack.url, '/favicon.ico').catch(() => undefined))?.status === 404 ? true : undefined),
      5000,
      'service on the same port',
    );
    expect(stack.stderr()).to.match(/proxy \(pid \d+\) exited with signal SIGKILL; restarting in \d+ ms/);
    expect(stack.stdout().trim().split('\n')).to.deep.equal([`listening on ${stack.url}`, `listening on ${stack.url}`]);
  });

  it('on SIGTERM finishes the requests of keep-alive clients, closes their connections, and logs every one', async function () {
    // A host worker runs one request at a time (php-fpm's model): five in flight at the stop need five.
    await stack.stop();
    stack = await startStack(sandbox, ['--workers', '5']);
    const called = callMarker(sandbox, 'Half');
    writeFileSync(
      join(sandbox.controllers, 'Half.ts'),
      `export default async () => { ${called.statement} await new Promise((r) => setTimeout(r, 500)); return 'half'; };\n`,
    );
    const { Agent } = await import('node:http');
    const { request } = await import('node:http');
    const agent = new Agent({ keepAlive: true });
    const { hostname, port } = new URL(stack.url);
    const ask = () =>
      new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
        request({ host: hostname, port, path: '/External/Half', agent }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, connection: res.headers.connection }));
        })
          .on('error', reject)
          .end();
      });
    const warm = await Promise.all(Array.from({ length: 5 }, ask)); // five open keep-alive connections
    expect(warm.map((r) => r.connection)).to.deep.equal(Array(5).fill('keep-alive'));
    const pending = Array.from({ length: 5 }, ask);
    await called.reached(3000, 10); // the five warm-up calls and these five
    const code = stack.stop();
    const replies = await Promise.all(pending);
    agent.destroy();
    expect(replies.map((r) => [r.status, r.body, r.connection])).to.deep.equal(Array(5).fill([200, 'half', 'close']));
    expect(await code).to.equal(0);
    expect(readLog(sandbox, 'access.log').filter((l) => l.includes('"GET /External/Half HTTP/1.1" 200 4'))).to.have.length(10);
  });

  it('on SIGTERM cuts a request still running at --shutdown-timeout, logs it, and exits 0', async function () {
    await stack.stop();
    stack = await startStack(sandbox, ['--shutdown-timeout', '1']);
    const finished = join(sandbox.dir, 'finished.txt');
    const called = callMarker(sandbox, 'Endless');
    writeFileSync(
      join(sandbox.controllers, 'Endless.ts'),
      `import { writeFileSync } from 'node:fs';\nexport default async () => { ${called.statement} await new Promise((r) => setTimeout(r, 8000)); writeFileSync(${JSON.stringify(finished)}, 'x'); return 'late'; };\n`,
    );
    const pending = get(stack.url, '/External/Endless').then(
      (reply) => reply.status,
      (err: NodeJS.ErrnoException) => err.code,
    );
    await called.reached();
    expect(await stack.stop()).to.equal(0);
    // Cut (connection reset) or answered by the proxy, but never the controller's late answer.
    expect(await pending).to.be.oneOf(['ECONNRESET', 503, 500]);
    expect(existsSync(finished), 'the stop waited for the controller').to.equal(false);
    expect(readLog(sandbox, 'access.log').filter((l) => l.includes('"GET /External/Endless HTTP/1.1"'))).to.have.length(1);
  });

  it('on SIGTERM lets a request in flight finish, then exits 0 with every log line written', async function () {
    const called = slowController(sandbox, 'Slow', 700);
    const pending = get(stack.url, '/External/Slow');
    await called.reached();
    const code = stack.stop();
    const reply = await pending;
    expect(reply.status).to.equal(200);
    expect(reply.body).to.equal('done slowly');
    expect(await code).to.equal(0);
    expect(readLog(sandbox, 'access.log').filter((l) => l.includes('"GET /External/Slow HTTP/1.1" 200 11'))).to.have.length(1);
    const hostLog = readLog(sandbox, 'host.log');
    expect(hostLog.some((l) => /Host pool \d+ shutting down \(SIGTERM\)/.test(l))).to.equal(true);
    // Every worker that said it was ready also said it retired: none was killed mid-request.
    const ready = hostLog.flatMap((l) => /Worker (\d+) ready/.exec(l)?.[1] ?? []);
    const retired = hostLog.flatMap((l) => /Worker (\d+) retiring/.exec(l)?.[1] ?? []);
    expect(ready).to.have.length.greaterThan(0);
    expect(retired.sort()).to.deep.equal(ready.sort());
  });

  it('brings both example controllers to life when copied in, without a restart', async function () {
    expect((await get(stack.url, '/External/Latest?sn=123&no=')).status).to.equal(500);
    const examples = join(ROOT, 'examples', 'controllers');
    for (const file of readdirSync(examples)) copyFileSync(join(examples, file), join(sandbox.controllers, file));
    const latest = await eventually(
      async () => {
        const reply = await get(stack.url, '/External/Latest?sn=123&no=');
        return reply.status === 200 ? reply : undefined;
      },
      1000,
      'Latest to answer 200',
    );
    expect(JSON.parse(latest.body)).to.deep.equal({
      sn: '123',
      no: '',
      readings: [{ no: 3, at: '2026-11-22T01:42:00Z', temperature: 22.1, humidity: 39 }],
    });
    const alarm = await get(stack.url, '/External/Alarm?all_alarm&all');
    expect(alarm.status).to.equal(200);
    expect(JSON.parse(alarm.body).alarms.map((a: { sn: string }) => a.sn)).to.deep.equal(['123', '456']);
  });
});

/** Not exited: a zombie has exited and waits only for its parent to read its status. */
function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('npm start under a process manager', function () {
  let sandbox: Sandbox;
  let npmStart: { child: ChildProcess; exited: Promise<unknown> } | undefined;
  let stackPids: number[] = [];

  before(() => (sandbox = makeSandbox()));

  after(async function () {
    // npm still running means its ready line never came or the SIGTERM did not end it: the stack under it
    // is found before npm goes (its children are then re-parented) and killed with it.
    const npm = npmStart?.child;
    if (npm && npm.exitCode === null && npm.signalCode === null) {
      stackPids = [...new Set([...stackPids, ...descendants(npm.pid!)])];
      npm.kill('SIGKILL');
      await npmStart!.exited;
    }
    // Had the SIGTERM not reached the launcher, the stack would still run, orphaned: it is killed here.
    for (const pid of stackPids.filter(isRunning)) process.kill(pid, 'SIGKILL');
    sandbox.remove();
  });

  // Docker (`CMD ["npm", "start"]`) and pm2 stop a service by signalling the one process they started: npm
  // passes the SIGTERM to the script's shell, and dash does not pass it on to the command it waits for.
  it('passes a SIGTERM sent to npm on to the launcher, which stops every process of the stack', async function () {
    const npm = spawn('npm', ['start', '--', '--port', '0', '--listen', '127.0.0.1', '--www', sandbox.www, '--logs', sandbox.logs], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    npmStart = { child: npm, exited: once(npm, 'exit') };
    let stderr = '';
    npm.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    // Every process of the stack holds these pipes: both close once the last of them has exited.
    const closed = Promise.all([once(npm.stdout, 'close'), once(npm.stderr, 'close')]);
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: npm.stdout }).on('line', (line) => parseReadyUrls(line) && resolve());
      npm.once('exit', (code) => reject(new Error(`npm start exited with ${code} before the ready line: ${stderr}`)));
    });
    stackPids = descendants(npm.pid!);
    npm.kill('SIGTERM');
    await closed;
    expect(stderr).to.contain('SIGTERM: stopping the proxy, then the host');
    expect(stackPids.filter(isRunning)).to.deep.equal([]);
  });
});
