// Lines that name what really happened when a controller takes its worker down or answers a head no proxy would
// read: each names the controller, the request id and the cause (docs/design.md §3.2, H11 and H12).
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

  it('names the controller, the request and process.exit() when a controller calls it', async function () {
    write('Exiter.ts', 'export default () => { process.exit(0); };\n');
    const reply = await get(stack.url, '/External/Exiter?x=1');
    expect(reply.status).to.equal(500);
    const id = reply.headers['x-request-id'] as string;
    expect(await exitEvent(this, id)).to.match(
      new RegExp(
        `\\[error\\] \\[req ${id}\\] Worker \\d+ exited while running controller Exiter \\(${sandbox.controllers}/Exiter\\.ts\\) in GET /External/Exiter\\?x=1: ended by process\\.exit\\(0\\) called by controller Exiter$`,
      ),
    );
  });

  it('names the uncaught exception that crashed it, with its stack mapped to the controller', async function () {
    write(
      'Crasher.ts',
      [
        'export default async () => {',
        "  setTimeout(() => { throw new Error('boom in a timer'); }, 0);",
        '  await new Promise((resolve) => setTimeout(resolve, 5000));',
        "  return 'never';",
        '};',
        '',
      ].join('\n'),
    );
    const reply = await get(stack.url, '/External/Crasher');
    expect(reply.status).to.equal(500);
    const id = reply.headers['x-request-id'] as string;
    const event = await exitEvent(this, id);
    expect(event).to.match(
      new RegExp(
        `\\[req ${id}\\] Worker \\d+ exited while running controller Crasher .* in GET /External/Crasher: ended by an uncaught exception: Error: boom in a timer`,
      ),
    );
    expect(event).to.contain(`${sandbox.controllers}/Crasher.ts:2:`);
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
