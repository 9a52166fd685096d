// Several hosts behind one proxy (--upstream repeated): round robin, a GET that could not reach one host
// goes to the next, and a host that cannot be reached leaves the rotation for --upstream-fail-timeout.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { FORWARDERS } from '../../common/settings.ts';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startProcess, startProxy, type Running, type Sandbox } from '../helpers/stack.ts';

for (const forwarder of FORWARDERS) {
  describe(`several hosts behind the proxy (${forwarder})`, function () {
    let sandbox: Sandbox;
    const hosts: Record<'a' | 'b', Running | undefined> = { a: undefined, b: undefined };
    let proxy: Running;
    const socket = (name: 'a' | 'b') => join(sandbox.dir, `host-${name}.sock`);

    /** A host of its own (socket and host.log), whose controller says which host answered. */
    async function startHost(name: 'a' | 'b'): Promise<void> {
      const logs = join(sandbox.dir, `logs-${name}`);
      hosts[name] = await startProcess('host', ['--www', sandbox.www, '--logs', logs, '--socket', socket(name), '--workers', '1'], {
        WHICH_HOST: name,
      });
    }

    async function stopHost(name: 'a' | 'b'): Promise<void> {
      await hosts[name]?.stop();
      hosts[name] = undefined;
    }

    const who = async () => {
      const reply = await get(proxy.url, '/External/Who');
      return reply.status === 200 ? (JSON.parse(reply.body).host as string) : reply.status;
    };

    beforeEach(async function () {
      sandbox = makeSandbox();
      writeFileSync(join(sandbox.controllers, 'Who.ts'), `export default () => ({ host: process.env.WHICH_HOST });\n`);
      await Promise.all([startHost('a'), startHost('b')]);
      const upstreams = ['--upstream', `unix:${socket('a')}`, '--upstream', `unix:${socket('b')}`];
      // Turns and failure counts are each proxy process's own (nginx's without a shared zone): one process here.
      proxy = await startProxy(sandbox, [...upstreams, '--upstream-fail-timeout', '1', '--forwarder', forwarder, '--proxy-workers', '1']);
    });

    afterEach(async function () {
      await proxy?.stop();
      await Promise.all([stopHost('a'), stopHost('b')]);
      sandbox?.remove();
    });

    it('sends requests to each host in turn', async function () {
      const answers: (string | number)[] = [];
      for (let i = 0; i < 6; i++) answers.push(await who());
      expect(answers.filter((h) => h === 'a')).to.have.length(3);
      expect(answers.filter((h) => h === 'b')).to.have.length(3);
    });

    it('sends a GET that cannot reach one host to the other, and leaves the unreachable one out for a while', async function () {
      await stopHost('b');
      const answers: (string | number)[] = [];
      for (let i = 0; i < 10; i++) answers.push(await who());
      expect(answers).to.deep.equal(Array(10).fill('a'));
      const errors = await eventually(
        () => {
          const lines = readLog(sandbox, 'error.log');
          return lines.some((l) => l.includes('out of the rotation')) ? lines : undefined;
        },
        2000,
        'the out-of-rotation line',
      );
      // One failed connect took it out; the other nine requests did not try it (fail timeout 1 s).
      expect(errors.filter((l) => l.includes(`attempt to connect to upstream unix:${socket('b')} failed`))).to.have.length(1);
      expect(errors.filter((l) => l.includes(`upstream unix:${socket('b')} out of the rotation for 1 s`))).to.have.length(1);
    });

    it('drops no GET while one host of two restarts, and sends to it again once it is back', async function () {
      // The stop alone may wait 10 s for the proxy's idle connections.
      this.timeout(90_000);
      const statuses: (string | number)[] = [];
      let running = true;
      // Bounded in time, not in count: a host's stop waits for the proxy's idle connections to it (up to 10 s with
      // http-proxy's agent), and requests sent straight to the workers go fast enough to spend a count before then.
      const deadline = Date.now() + 60_000;
      const client = async () => {
        while (running && Date.now() < deadline) statuses.push(await who());
      };
      const clients = [client(), client(), client(), client()];
      try {
        await eventually(() => (statuses.includes('b') ? true : undefined), 3000, 'host b to answer');
        await stopHost('b');
        const stoppedAt = statuses.length;
        await startHost('b');
        // Back in the rotation after the 1 s fail timeout, at the latest.
        await eventually(() => (statuses.slice(stoppedAt).includes('b') ? true : undefined), 5000, 'host b to answer again');
      } finally {
        running = false;
        await Promise.all(clients);
      }
      expect(statuses.filter((s) => s !== 'a' && s !== 'b')).to.deep.equal([]);
    });

    it('answers 503 when no host can be reached, having tried each once', async function () {
      await Promise.all([stopHost('a'), stopHost('b')]);
      const reply = await get(proxy.url, '/External/Who');
      expect(reply.status).to.equal(503);
      const id = reply.headers['x-request-id'] as string;
      const lines = await eventually(
        () => {
          const mine = readLog(sandbox, 'error.log').filter((l) => l.includes(id));
          return mine.length === 2 ? mine : undefined;
        },
        2000,
        'a connect failure line for each host',
      );
      expect(lines.some((l) => l.includes(`upstream unix:${socket('a')} failed`))).to.equal(true);
      expect(lines.some((l) => l.includes(`upstream unix:${socket('b')} failed`))).to.equal(true);
    });

    it('sends a POST to one host only: a request with a body is not retried', async function () {
      await stopHost('b');
      const statuses: number[] = [];
      for (let i = 0; i < 2; i++)
        statuses.push(
          (await get(proxy.url, '/External/Who', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })).status,
        );
      // Round robin sends one of the two to b, which is gone: that one fails and is not sent again.
      expect(statuses.sort()).to.deep.equal([200, 503]);
    });
  });
}
