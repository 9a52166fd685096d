// Access control: the host is reachable by the proxy only (a 0600 socket in a 0700 directory,
// or a loopback-only port), its /status and /ping never answer through the proxy, and no answer tells a
// client where anything lives on disk.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { connect } from 'node:net';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, ROOT, startProcess, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** Sends `path` byte for byte (no client normalises it) and returns the whole answer, head and body. */
function raw(url: string, path: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
    socket.setTimeout(3000, () => socket.destroy(new Error(`no answer for ${path} within 3 s`)));
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  });
}

describe('access control', function () {
  this.timeout(30_000);

  describe('the host behind the launcher', function () {
    let sandbox: Sandbox;
    let stack: Running;
    let socketPath: string;

    before(async function () {
      sandbox = makeSandbox();
      writeFileSync(
        join(sandbox.controllers, 'Throws.ts'),
        `export default () => { throw new Error('failed in ' + __dirname + ' reading /etc/app.conf'); };\n`,
      );
      writeFileSync(join(sandbox.controllers, 'Broken.ts'), `export default () => { return (; };\n`);
      stack = await startStack(sandbox);
      const serving = await eventually(
        () => readLog(sandbox, 'host.log').find((l) => l.includes('Host pool')),
        5000,
        'the host serving line',
      );
      socketPath = /on unix:(\S+)/.exec(serving)![1];
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    it('listens on a 0600 socket in a 0700 directory', function () {
      expect(statSync(socketPath).mode & 0o777).to.equal(0o600);
      expect(statSync(dirname(socketPath)).mode & 0o777).to.equal(0o700);
    });

    it('answers /ping and /status on its socket (so the checks below can tell them apart)', async function () {
      expect((await get('http://host', '/ping', { socketPath })).body).to.equal('pong');
      expect(JSON.parse((await get('http://host', '/status', { socketPath })).body)).to.have.property('pid');
    });

    const hostOnly = [
      '/ping',
      '/status',
      '/status?full',
      '/External/../status',
      '/External/../ping',
      '/External/%2e%2e/status',
      '/External/%2E%2E/ping',
      '/External/..%2fstatus',
      '/External/..%2Fping',
      '/External/.%2e/status',
      '/External/%252e%252e/status',
      '//status',
      '/External//../status',
      '/External/Latest/../../status',
      '/./status',
      '/External%2f..%2fstatus',
      'http://127.0.0.1/status',
    ];
    for (const path of hostOnly) {
      it(`never reaches the host's status or ping through the proxy: ${path}`, async function () {
        const answer = await raw(stack.url, path);
        expect(answer).to.match(/^HTTP\/1\.1 (400|403|404|405|500) /);
        expect(answer).to.not.contain('pong');
        expect(answer).to.not.match(/"pid"|"workers"|"controllers"/);
      });
    }

    const revealing = [
      '/External/Latest?sn=123&no=1',
      '/External/Throws',
      '/External/Broken',
      '/favicon.ico',
      '/External/NoSuch',
      `/${'a'.repeat(5000)}`,
      `/External/${'A'.repeat(3000)}`,
      '/..%2f..%2fetc/passwd',
      '/%2e%2e/%2e%2e/etc/passwd',
      '/External/Latest%00.ts',
      '/External/%E2%80%AE',
      '/www/controllers/Latest.ts',
      '/../package.json',
      '/.env',
      '/nodir/',
      '/%ZZ',
    ];
    for (const path of revealing) {
      it(`reveals no file-system path in the answer to ${path.slice(0, 60)}`, async function () {
        const answer = await raw(stack.url, path);
        expect(answer).to.match(/^HTTP\/1\.1 \d{3} /);
        for (const secret of [
          sandbox.dir,
          ROOT,
          socketPath,
          dirname(socketPath),
          '/tmp/',
          'www/',
          'controllers',
          '.ts',
          'node_modules',
          '/etc/app.conf',
          'Error:',
        ]) {
          expect(answer, `${secret} in the answer`).to.not.contain(secret);
        }
      });
    }

    it("answers a throwing controller with Apache's 500 page and nothing of the error, and keeps the details in host.log", async function () {
      const answer = await raw(stack.url, '/External/Throws');
      expect(answer).to.match(/^HTTP\/1\.1 500 Internal Server Error\r\n/);
      const body = answer.split('\r\n\r\n')[1];
      expect(body).to.contain('<title>500 Internal Server Error</title>');
      expect(body).not.to.contain('/etc/app.conf');
      await eventually(
        () => (readLog(sandbox, 'host.log').some((l) => l.includes('/etc/app.conf')) ? true : undefined),
        3000,
        'the error in host.log',
      );
    });
  });

  describe('the host on a port (--host-port)', function () {
    let sandbox: Sandbox;
    let host: Running;

    before(async function () {
      sandbox = makeSandbox();
      host = await startProcess('host', ['--www', sandbox.www, '--logs', sandbox.logs, '--host-port', '0', '--workers', '1']);
    });

    after(async function () {
      await host?.stop();
      sandbox?.remove();
    });

    it('binds the loopback address only', function () {
      const url = new URL(host.url);
      expect(url.hostname).to.equal('127.0.0.1');
      // The kernel's own table: the listening socket's local address is 127.0.0.1 (0100007F), not 0.0.0.0.
      const portHex = Number(url.port).toString(16).toUpperCase().padStart(4, '0');
      const listening = readFileSync('/proc/net/tcp', 'utf8')
        .split('\n')
        .slice(1)
        .map((l) => l.trim().split(/\s+/))
        .filter((f) => f[1]?.endsWith(`:${portHex}`) && f[3] === '0A');
      expect(listening.map((f) => f[1])).to.deep.equal([`0100007F:${portHex}`]);
      const v6 = (() => {
        try {
          return readFileSync('/proc/net/tcp6', 'utf8');
        } catch {
          return '';
        }
      })();
      expect(v6.split('\n').filter((l) => l.includes(`:${portHex} `) && / 0A /.test(l))).to.deep.equal([]);
    });
  });
});
