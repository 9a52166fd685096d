// Lines that name what really happened when a controller takes its worker down or answers a head no proxy would
// read: each names the controller, the request id and the cause (docs/design.md §3.2, H11 and H12).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readHostEvents, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

describe('a worker that exits during a request', function () {
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

  /** The host.log event of the request `id` that says its worker exited. */
  const exitEvent = (id: string) =>
    eventually(
      () => readHostEvents(sandbox).find((e) => e.includes(`[req ${id}]`) && e.includes('exited while running controller')),
      5000,
      `the exit line of request ${id}`,
    );

  it('names the controller, the request and process.exit() when a controller calls it', async function () {
    write('Exiter.ts', 'export default () => { process.exit(0); };\n');
    const reply = await get(stack.url, '/External/Exiter?x=1');
    expect(reply.status).to.equal(500);
    const id = reply.headers['x-request-id'] as string;
    expect(await exitEvent(id)).to.match(
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
    const event = await exitEvent(id);
    expect(event).to.match(
      new RegExp(
        `\\[req ${id}\\] Worker \\d+ exited while running controller Crasher .* in GET /External/Crasher: ended by an uncaught exception: Error: boom in a timer`,
      ),
    );
    expect(event).to.contain(`${sandbox.controllers}/Crasher.ts:2:`);
  });
});
