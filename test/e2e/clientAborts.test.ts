// A client that leaves while its controller awaits with its signal (what the README advises) is the client's
// doing: one info line in host.log, counted as an abort, never as the controller's error; access.log's %X says X
// (docs/logs.md, "Log lines", H13; "Layouts in detail").
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { connect as h2connect, constants } from 'node:http2';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { FORWARDERS } from '../../common/settings.ts';
import { get } from '../helpers/http.ts';
import { makeCertificate } from '../../tools/certificate.ts';
import { callMarker, eventually, makeSandbox, readHostEvents, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const run = promisify(execFile);

for (const forwarder of FORWARDERS) {
  describe(`a client that leaves while its controller awaits (${forwarder})`, function () {
    let sandbox: Sandbox;
    let stack: Running;

    before(async function () {
      sandbox = makeSandbox();
      writeFileSync(
        join(sandbox.controllers, 'Waiter.ts'),
        [
          "import { setTimeout as sleep } from 'node:timers/promises';",
          'export default async ({ signal }: { signal: AbortSignal }) => {',
          '  await sleep(5000, undefined, { signal });',
          "  return 'waited';",
          '};',
          '',
        ].join('\n'),
      );
      stack = await startStack(sandbox, ['--workers', '1', '--forwarder', forwarder, '--log-format', '"%r" %>s %b %X %L']);
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    it('logs one info line with how long it ran, counts an abort and no error, and %X is X', async function () {
      const id = `abort-${forwarder}-${Date.now()}`;
      // curl's exit 28: it gave up after 0.3 s, as the client did.
      const left = await run('curl', ['--silent', '--max-time', '0.3', '-H', `X-Request-Id: ${id}`, `${stack.url}/External/Waiter`]).then(
        () => 0,
        (err: { code: number }) => err.code,
      );
      expect(left).to.equal(28);
      const event = await eventually(
        () => readHostEvents(sandbox).find((e) => e.includes(`[req ${id}]`)),
        5000,
        'the host.log line of the abort',
      );
      expect(event).to.match(
        new RegExp(`\\[info\\] \\[req ${id}\\] Client closed the request to controller Waiter in GET /External/Waiter after \\d+ ms$`),
      );
      // The abort's own line is there: no other line of that request followed it (no uncaught exception, no stack).
      expect(readHostEvents(sandbox).filter((e) => e.includes(id))).to.have.length(1);
      const access = await eventually(
        () => readLog(sandbox, 'access.log').find((line) => line.endsWith(` ${id}`)),
        5000,
        'the access line of the abort',
      );
      expect(access).to.equal(`"GET /External/Waiter HTTP/1.1" 200 - X ${id}`);
      const metrics = (await get(stack.url, '/metrics')).body;
      expect(metrics).to.match(/^extqs_host_controller_aborts_total\{upstream="[^"]+",controller="Waiter"\} 1$/m);
      expect(metrics).not.to.match(/^extqs_host_controller_errors_total\{[^}]*controller="Waiter"\} [1-9]/m);
    });
  });
}

describe('an HTTP/2 client that resets its stream', function () {
  let sandbox: Sandbox;
  let stack: Running;
  let waiterCalls: ReturnType<typeof callMarker>;

  before(async function () {
    sandbox = makeSandbox();
    const pair = makeCertificate(sandbox.dir);
    waiterCalls = callMarker(sandbox, 'Waiter');
    writeFileSync(
      join(sandbox.controllers, 'Waiter.ts'),
      [
        "import { setTimeout as sleep } from 'node:timers/promises';",
        'export default async ({ signal }: { signal: AbortSignal }) => {',
        `  ${waiterCalls.statement}`,
        '  await sleep(5000, undefined, { signal });',
        "  return 'waited';",
        '};',
        '',
      ].join('\n'),
    );
    writeFileSync(join(sandbox.controllers, 'Fast.ts'), "export default () => 'fast';\n");
    const args = ['--tls-port', '0', '--tls-cert', pair.cert, '--tls-key', pair.key, '--log-format', '"%r" %>s %b %X %L'];
    stack = await startStack(sandbox, args);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  const accessLine = (id: string) =>
    eventually(() => readLog(sandbox, 'access.log').find((line) => line.endsWith(` ${id}`)), 5000, `the access line of ${id}`);

  it('logs %X as X for a stream reset while its controller awaits, + for one answered, on one connection', async function () {
    const session = h2connect(stack.tlsUrl!, { rejectUnauthorized: false });
    session.on('error', () => {});
    try {
      const reset = `h2-reset-${Date.now()}`;
      const stream = session.request({ ':path': '/External/Waiter', 'x-request-id': reset }).on('error', () => {});
      await waiterCalls.reached(10_000);
      stream.close(constants.NGHTTP2_CANCEL);
      await once(stream, 'close');
      expect(await accessLine(reset)).to.equal(`"GET /External/Waiter HTTP/2.0" 200 - X ${reset}`);

      const answered = `h2-answered-${Date.now()}`;
      const fast = session.request({ ':path': '/External/Fast', 'x-request-id': answered });
      fast.resume();
      await once(fast, 'end');
      expect(await accessLine(answered)).to.equal(`"GET /External/Fast HTTP/2.0" 200 4 + ${answered}`);
    } finally {
      session.close();
    }
  });
});
