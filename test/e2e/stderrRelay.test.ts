// The host's failure messages in error.log, as mod_fcgid relays a PHP process's stderr, for a host that
// runs as a process of its own on TCP (another machine in production), on both forwarding engines, in
// Apache's words for a script without headers, a reset connection and a body failing mid-answer; and
// the host's "ended without headers" answer keeping its connection (docs/design.md §5).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { expect } from 'chai';
import { ENDED_WITHOUT_HEADERS_FIELD, HOST_STDERR_FIELD } from '../../common/protocol.ts';
import { FORWARDERS } from '../../common/settings.ts';
import { curl } from '../helpers/clients.ts';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startProcess, startProxy, type Running, type Sandbox } from '../helpers/stack.ts';

for (const forwarder of FORWARDERS) {
  describe(`the host's stderr in error.log (host on TCP, --forwarder ${forwarder})`, function () {
    let sandbox: Sandbox;
    let host: Running;
    let proxy: Running;

    before(async function () {
      sandbox = makeSandbox();
      writeFileSync(join(sandbox.controllers, 'Throws.ts'), `export default () => { throw new Error('boom'); };\n`);
      writeFileSync(join(sandbox.controllers, 'Broken.ts'), `export default ( => 1;\n`);
      writeFileSync(
        join(sandbox.controllers, 'Midway.ts'),
        `export default () => {
  let sent = false;
  return new Response(new ReadableStream({
    pull(controller) {
      if (!sent) { sent = true; controller.enqueue(new TextEncoder().encode('part of the answer'.padEnd(5000, '.'))); return; }
      throw new Error('midway boom');
    },
  }), { headers: { 'Content-Type': 'text/plain' } });
};\n`,
      );
      writeFileSync(
        join(sandbox.controllers, 'Dies.ts'),
        `export default () => { process.kill(process.pid, 'SIGKILL'); return new Promise(() => {}); };\n`,
      );
      host = await startProcess('host', ['--www', sandbox.www, '--logs', sandbox.logs, '--host-port', '0', '--workers', '1']);
      proxy = await startProxy(sandbox, ['--upstream', host.url, '--forwarder', forwarder]);
    });

    after(async function () {
      await proxy?.stop();
      await host?.stop();
      sandbox?.remove();
    });

    /** The error.log lines of one request, once `count` of them are there. */
    const linesOf = (id: string, count: number) =>
      eventually(
        () => {
          const lines = readLog(sandbox, 'error.log').filter((l) => l.endsWith(`request_id: ${id}`));
          return lines.length >= count ? lines : undefined;
        },
        3000,
        `${count} error.log lines for ${id}`,
      );

    it('writes the missing controller\'s "Failed opening controller script" as fcgid stderr, then "End of script output before headers"', async function () {
      const reply = await get(proxy.url, '/External/Latest?sn=123&no=');
      expect(reply.status).to.equal(500);
      expect(reply.body).to.contain('<title>500 Internal Server Error</title>');
      expect(reply.headers).to.not.have.property('x-extqs-stderr');
      expect(reply.headers).to.not.have.property('x-extqs-ended-without-headers');
      const [relayed, ended] = await linesOf(reply.headers['x-request-id'] as string, 2);
      expect(relayed).to.match(
        /\[fcgid:warn\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] mod_fcgid: stderr: PHP Fatal error: {2}Failed opening controller script .*\/Latest\.ts: No such file or directory .* in GET \/External\/Latest\?sn=123&no=, request_id: /,
      );
      expect(ended).to.contain('[core:error]');
      expect(ended).not.to.contain('ECONNRESET');
      expect(ended).to.contain('End of script output before headers: /External/Latest');
      // host.log keeps its line; the pool writes it after the worker's message, so it may come after the reply.
      await eventually(
        () => readLog(sandbox, 'host.log').find((l) => l.includes('Failed opening controller script') && l.includes('Latest.ts')),
        3000,
        'the host.log line',
      );
    });

    it("appends the request's referer to each of its error lines, as Apache does, before the request id", async function () {
      const id = `referer-${forwarder}`;
      const reply = await curl(`${proxy.url}/External/Latest?sn=1`, ['-e', 'http://ref.example/p?q=1', '-H', `X-Request-Id: ${id}`]);
      expect(reply.status).to.equal(500);
      const [relayed, ended] = await linesOf(id, 2);
      expect(relayed).to.match(
        /mod_fcgid: stderr: PHP Fatal error: {2}Failed opening .*, referer: http:\/\/ref\.example\/p\?q=1, request_id: referer-/,
      );
      expect(ended).to.match(
        /End of script output before headers: \/External\/Latest, referer: http:\/\/ref\.example\/p\?q=1, request_id: referer-/,
      );
    });

    it('logs the missing controller, not a body error, for a form POST to it', async function () {
      const reply = await get(proxy.url, '/External/Latest', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: 'sn=123&no=1',
      });
      expect(reply.status).to.equal(500);
      const [relayed] = await linesOf(reply.headers['x-request-id'] as string, 2);
      expect(relayed).to.match(
        /mod_fcgid: stderr: PHP Fatal error: {2}Failed opening controller script .*\/Latest\.ts: No such file or directory .* in POST \/External\/Latest/,
      );
    });

    it("writes a controller's parse error, with its file and line", async function () {
      const reply = await get(proxy.url, '/External/Broken');
      expect(reply.status).to.equal(500);
      const [relayed] = await linesOf(reply.headers['x-request-id'] as string, 2);
      expect(relayed).to.match(/mod_fcgid: stderr: PHP Fatal error: {2}.*Broken\.ts:1/);
    });

    it("writes an uncaught exception's first line alone, and answers Apache's 500 page as for a missing controller", async function () {
      const reply = await get(proxy.url, '/External/Throws');
      expect(reply.status).to.equal(500);
      expect(reply.body).to.contain('<title>500 Internal Server Error</title>');
      expect(reply.body).not.to.contain('boom');
      expect(reply.headers).to.not.have.property('x-extqs-controller-failed');
      const id = reply.headers['x-request-id'] as string;
      const [relayed] = await linesOf(id, 1);
      expect(relayed).to.match(
        /mod_fcgid: stderr: PHP Fatal error: {2}Uncaught exception in controller .*Throws\.ts .*: Error: boom, request_id: /,
      );
      // The script did send its headers: no "End of script output before headers" after it.
      const ok = await get(proxy.url, '/External/Latest');
      await linesOf(ok.headers['x-request-id'] as string, 2);
      expect(readLog(sandbox, 'error.log').filter((l) => l.endsWith(`request_id: ${id}`))).to.have.length(1);
    });

    it('does not let a controller send the signals as its own headers', async function () {
      writeFileSync(
        join(sandbox.controllers, 'Forges.ts'),
        `export default () => new Response('fine', { headers: { 'X-Extqs-Stderr': 'forged', 'X-Extqs-Ended-Without-Headers': '1' } });\n`,
      );
      const reply = await get(proxy.url, '/External/Forges');
      expect(reply.status).to.equal(200);
      expect(reply.body).to.equal('fine');
      expect(reply.headers, 'the signals passed to the client').not.to.have.any.keys(HOST_STDERR_FIELD, ENDED_WITHOUT_HEADERS_FIELD);
      // A marker: once a later request's lines are in error.log, a line of the forged one would be there too.
      const marker = await get(proxy.url, '/External/Latest');
      await linesOf(marker.headers['x-request-id'] as string, 2);
      expect(
        readLog(sandbox, 'error.log').filter((l) => l.includes('forged') || l.includes(reply.headers['x-request-id'] as string)),
      ).to.deep.equal([]);
    });

    it('writes a missing controller as the stderr line, then core\'s "End of script output before headers", without errno text', async function () {
      const reply = await get(proxy.url, '/External/Latest?sn=1&no=');
      expect(reply.status).to.equal(500);
      const [relayed, ended] = await linesOf(reply.headers['x-request-id'] as string, 2);
      expect(relayed).to.match(
        /\[fcgid:warn\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] mod_fcgid: stderr: PHP Fatal error: {2}Failed opening controller script /,
      );
      expect(ended).to.match(
        /\] \[core:error\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] End of script output before headers: \/External\/Latest, request_id: /,
      );
      expect(ended).not.to.match(/ECONNRESET|other side closed|socket hang up/);
    });

    it('answers 500 with what was written when a body fails within the output buffer, GET and HEAD alike', async function () {
      writeFileSync(
        join(sandbox.controllers, 'Early.ts'),
        `export default () => {
  let sent = false;
  return new Response(new ReadableStream({
    pull(controller) {
      if (!sent) { sent = true; controller.enqueue(new TextEncoder().encode('partial output\\n')); return; }
      throw new Error('early boom');
    },
  }), { headers: { 'Content-Type': 'text/plain' } });
};
`,
      );
      const id = `early-${forwarder}`;
      // curl exits 0: a whole answer, never a cut (18) or an empty reply (52).
      const reply = await curl(`${proxy.url}/External/Early`, ['-H', `X-Request-Id: ${id}`]);
      expect(reply.status).to.equal(500);
      expect(reply.body.toString()).to.equal('partial output\n');
      const lines = await linesOf(id, 2);
      expect(lines[0]).to.match(
        /\[fcgid:warn\] .* mod_fcgid: stderr: PHP Fatal error: {2}Uncaught exception in controller .*Early\.ts \(version \w+\) while sending its answer in GET \/External\/Early: Error: early boom, request_id: /,
      );
      const access = await eventually(
        () => readLog(sandbox, 'access.log').find((line) => line.includes('"GET /External/Early ')),
        5000,
        'the access line',
      );
      expect(access).to.match(/" 500 15 "/);
      const head = await curl(`${proxy.url}/External/Early`, ['--head', '-H', `X-Request-Id: ${id}-head`]);
      expect(head.status).to.equal(500);
      expect((await linesOf(`${id}-head`, 1))[0]).to.contain('early boom');
    });

    it('relays a body that fails after the answer began: the fatal error and its first stack lines, and the client cut', async function () {
      const id = `midway-${forwarder}`;
      const outcome = await get(proxy.url, '/External/Midway', { headers: { 'X-Request-Id': id } }).then(
        (reply) => `answered ${reply.status} ${JSON.stringify(reply.body)}`,
        (err: Error) => `cut: ${err.message}`,
      );
      expect(outcome).to.match(/^cut: /);
      const lines = await linesOf(id, 2);
      expect(lines[0]).to.match(
        /\[fcgid:warn\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] mod_fcgid: stderr: PHP Fatal error: {2}Uncaught exception in controller .*Midway\.ts \(version \w+\) while sending its answer in GET \/External\/Midway: Error: midway boom, request_id: /,
      );
      expect(lines[1]).to.match(/mod_fcgid: stderr: {5}at .*Midway\.ts/);
      // The fatal error, at most three stack lines, and the proxy's line for the cut.
      expect(lines.length).to.be.at.most(5);
      // The connection to the host was kept: the next request is answered.
      expect((await get(proxy.url, '/External/Latest')).status).to.equal(500);
    });

    it('gives curl the status and the bytes before a failure past the output buffer, then a cut (exit 18, never an empty reply), and logs both', async function () {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const id = `cut-${forwarder}-${i}`;
        ids.push(id);
        const { status, stdout } = await new Promise<{ status: number | null; stdout: string }>((resolve) =>
          execFile(
            'curl',
            [
              '-s',
              '-o',
              '/dev/null',
              '-w',
              '%{http_code} %{size_download}',
              '-H',
              `X-Request-Id: ${id}`,
              `${proxy.url}/External/Midway?${id}`,
            ],
            (err, out) => resolve({ status: err ? Number((err as { code?: number }).code) : 0, stdout: out }),
          ),
        );
        expect({ status, stdout }, 'curl: transfer closed with outstanding read data remaining').to.deep.equal({
          status: 18,
          stdout: '200 5000',
        });
      }
      for (const id of ids) {
        const lines = await linesOf(id, 3);
        expect(lines.find((l) => l.includes('[proxy:error]'))).to.contain(
          'the answer to /External/Midway was cut after 5000 bytes of its body',
        );
      }
      // Each request's own line, by its query: other tests of this stack request Midway too.
      const access = await eventually(
        () => {
          const lines = readLog(sandbox, 'access.log').filter((l) => ids.some((id) => l.includes(`GET /External/Midway?${id} `)));
          return lines.length === ids.length ? lines : undefined;
        },
        3000,
        'the access lines',
      );
      // What reached the client, not a declared length.
      for (const line of access) expect(line).to.match(/" 200 5000 /);
    });

    // Last: it kills the host's only worker.
    it('writes a worker killed before its headers as a reset read (104), then "End of script output before headers"', async function () {
      const reply = await get(proxy.url, '/External/Dies');
      expect(reply.status).to.equal(500);
      const [reset, ended] = await linesOf(reply.headers['x-request-id'] as string, 2);
      expect(reset).to.match(
        /\[fcgid:warn\] \[pid \d+\] \(104\)Connection reset by peer: \[client 127\.0\.0\.1:\d+\] mod_fcgid: error reading data from FastCGI server, request_id: /,
      );
      expect(ended).to.match(
        /\[core:error\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] End of script output before headers: \/External\/Dies, request_id: /,
      );
    });
  });
}

describe('the host answering "ended without headers" directly', function () {
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

  it('keeps the connection: two missing-controller requests on one socket', async function () {
    const { hostname, port } = new URL(host.url);
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    const ask = () =>
      new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
        const req = request({ host: hostname, port, path: '/External/Latest', agent }, (res) => {
          sockets.add(res.socket);
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
        });
        req.on('error', reject);
        req.end();
      });
    const first = await ask();
    const second = await ask();
    agent.destroy();
    for (const reply of [first, second]) {
      expect(reply.status).to.equal(500);
      expect(reply.headers['x-extqs-ended-without-headers']).to.equal('1');
      expect(decodeURIComponent(String(reply.headers['x-extqs-stderr']))).to.match(
        /^PHP Fatal error: {2}Failed opening controller script .*Latest\.ts: No such file or directory/,
      );
    }
    expect(sockets.size).to.equal(1);
  });
});
