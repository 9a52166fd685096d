// Lines that name what really happened when a controller takes its worker down or answers a head no proxy would
// read: each names the controller, the request id and the cause (docs/logs.md, "Log lines", H11 and H12).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { FORWARDERS } from '../../common/settings.ts';
import { curl } from '../helpers/clients.ts';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readHostEvents, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** What the request and its checks may take at most, within the test's timeout. */
const EXIT_EVENT_MARGIN_MS = 5000;

describe('a worker that exits during a request', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let stack: Running;
  const write = (file: string, source: string) => writeFileSync(join(sandbox.controllers, file), source);

  before(async function () {
    sandbox = makeSandbox();
    stack = await startStack(sandbox, ['--workers', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  /**
   * The host.log event of the request `id` that says its worker exited: it is in the primary's pipe before the
   * worker's exit ends the request, and reaches the file once the primary gets to it, which a machine under load
   * can put off for seconds. So the wait is bounded by the test's own timeout (less a margin, to fail with this
   * message rather than mocha's), not by a guess at the machine's speed.
   */
  const exitEvent = (test: Mocha.Context, id: string) =>
    eventually(
      () => readHostEvents(sandbox).find((e) => e.includes(`[req ${id}]`) && e.includes('exited while running controller')),
      test.timeout() - EXIT_EVENT_MARGIN_MS,
      `the exit line of request ${id}`,
    );

  // process.exit() in a controller's own code ends its request alone (controllerFaults.test.ts); outside any
  // request (a timer its load started) it is the worker's exit, as the host's own calls are.
  it('names the calls it took down when process.exit() is called outside any controller call', async function () {
    write(
      'ExitLater.ts',
      [
        'setTimeout(() => process.exit(0), 300);',
        'export default async () => {',
        '  await new Promise((resolve) => setTimeout(resolve, 5000));',
        "  return 'never';",
        '};',
        '',
      ].join('\n'),
    );
    // A POST with a body, which the proxy never sends again to the next worker.
    const reply = await get(stack.url, '/External/ExitLater?x=1', { method: 'POST', body: 'x' });
    expect(reply.status).to.equal(500);
    const id = reply.headers['x-request-id'] as string;
    expect(await exitEvent(this, id)).to.match(
      new RegExp(
        `\\[error\\] \\[req ${id}\\] Worker \\d+ exited while running controller ExitLater \\(${sandbox.controllers}/ExitLater\\.ts\\) in POST /External/ExitLater\\?x=1: ended by process\\.exit\\(0\\) called outside any controller call$`,
      ),
    );
  });
});

for (const forwarder of FORWARDERS) {
  describe(`a controller answering a head past its bound (${forwarder})`, function () {
    let sandbox: Sandbox;
    let stack: Running;

    before(async function () {
      sandbox = makeSandbox();
      // n fields of about 12 bytes each: 100,000 of them grew the worker by 117 MB and reset the proxy's read.
      writeFileSync(
        join(sandbox.controllers, 'Fields.ts'),
        [
          'export default ({ query }: { query: Record<string, unknown> }) => {',
          '  const headers = new Headers();',
          '  for (let i = 0; i < Number(query.n); i += 1) headers.set(`x-f${i}`, String(i));',
          "  return new Response('fields', { headers });",
          '};',
          '',
        ].join('\n'),
      );
      stack = await startStack(sandbox, ['--workers', '1', '--forwarder', forwarder]);
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    it('answers 500 and logs one line naming the controller, the request and the size, in host.log and error.log', async function () {
      const reply = await curl(`${stack.url}/External/Fields?n=100000`);
      expect(reply.status).to.equal(500);
      const id = reply.headers['x-request-id'];
      const event = await eventually(
        () => readHostEvents(sandbox).find((e) => e.includes(`[req ${id}]`)),
        5000,
        'the host.log line of the big head',
      );
      expect(event).to.match(
        new RegExp(
          `\\[error\\] \\[req ${id}\\] Controller Fields \\(${sandbox.controllers}/Fields\\.ts\\) answered in GET /External/Fields\\?n=100000, but its answer's header fields take \\d+ bytes, more than the 8192 a controller may send: answered 500$`,
        ),
      );
      const lines = await eventually(
        () => {
          const mine = readLog(sandbox, 'error.log').filter((line) => line.endsWith(`request_id: ${id}`));
          return mine.length > 0 ? mine : undefined;
        },
        5000,
        'the error.log line of the big head',
      );
      expect(lines).to.have.length(1);
      expect(lines[0]).to.match(
        /\[fcgid:warn\] .* mod_fcgid: stderr: PHP Fatal error: {2}Controller Fields .* more than the 8192 a controller may send/,
      );
      expect(lines[0]).not.to.contain('Connection reset');
    });

    it('passes a head within the bound', async function () {
      const reply = await curl(`${stack.url}/External/Fields?n=500`);
      expect(reply.status).to.equal(200);
      expect(reply.headers['x-f499']).to.equal('499');
      expect(reply.body.toString()).to.equal('fields');
    });
  });
}
