// php-fpm's slowlog (--slowlog-timeout): a controller call still running after the timeout gets its
// JavaScript stack in host.log, in the controller's own source lines, whether its worker's thread is
// stuck in a synchronous loop or the call awaits; the --max-execution-time kill logs the stack too.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readHostEvents, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** A controller stuck in `spinForever`; the types and comments above it are not in the bundle esbuild makes,
 *  so its compiled line differs from its source line. */
const SPIN = `// Stuck on purpose.
interface Turns {
  count: number;
}

export default function handler(): string {
  return spinForever({ count: 0 });
}

function spinForever(turns: Turns): string {
  while (true) turns.count += 1;
}
`;
const LOOP_LINE = SPIN.split('\n').findIndex((line) => line.includes('while (true)')) + 1;
const HANDLER_LINE = SPIN.split('\n').findIndex((line) => line.includes('return spinForever')) + 1;

const SLEEPY = `export default async function sleepy(): Promise<string> {
  await new Promise((resolve) => setTimeout(resolve, 2500));
  return 'late';
}
`;

const STALLED = `export default (): Promise<string> => new Promise((resolve) => setTimeout(() => resolve('never seen'), 60_000));\n`;

/** host.log's events (a slowlog entry with its frame lines) for the request `id` that contain `phrase`. */
function eventOf(sandbox: Sandbox, id: string, phrase: string): string | undefined {
  return readHostEvents(sandbox).find((event) => event.includes(`[req ${id}]`) && event.includes(phrase));
}

/** The request id of the slowlog's first entry for `controller` (the test does not know it before the reply). */
function slowlogIdOf(sandbox: Sandbox, controller: string): string | undefined {
  const event = readHostEvents(sandbox).find((e) => e.includes(`Slow controller call: ${controller} `));
  return event && /\[req ([^\]]+)\]/.exec(event)?.[1];
}

describe('the slowlog (--slowlog-timeout 1 --max-execution-time 4)', function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Spin.ts'), SPIN);
    writeFileSync(join(sandbox.controllers, 'Sleepy.ts'), SLEEPY);
    writeFileSync(join(sandbox.controllers, 'Stalled.ts'), STALLED);
    stack = await startStack(sandbox, ['--workers', '2', '--slowlog-timeout', '1', '--max-execution-time', '4']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('logs a call that awaits as awaiting, with no frame, and lets it finish', async function () {
    const reply = await get(stack.url, '/External/Sleepy');
    expect(reply.status).to.equal(200);
    expect(reply.body).to.equal('late');
    const id = reply.headers['x-request-id'] as string;
    const slow = await eventually(() => eventOf(sandbox, id, 'Slow controller call'), 3000, 'the slowlog entry');
    expect(slow).to.contain('Slow controller call: Sleepy');
    expect(slow).to.contain('in GET /External/Sleepy has run');
    expect(slow).to.contain('(awaiting: no JavaScript of the call is running');
  });

  it('logs a call that awaits past the limit as awaiting when it is dropped', async function () {
    const reply = await get(stack.url, '/External/Stalled');
    expect(reply.status).to.equal(504);
    const id = reply.headers['x-request-id'] as string;
    await eventually(() => eventOf(sandbox, id, 'has run'), 3000, 'the slowlog entry');
    const dropped = await eventually(() => eventOf(sandbox, id, 'was dropped after'), 5000, 'the entry at the drop');
    expect(dropped).to.match(
      /\[error\] \[req [^\]]+\] Slow controller call: Stalled \(.*\) in GET \/External\/Stalled was dropped after 4\.\d s/,
    );
    expect(dropped).to.contain('\n    (awaiting: no JavaScript of the call is running');
  });

  it("logs the stack of a call stuck in a synchronous loop, at the loop's .ts line, then again at its kill", async function () {
    const reply = get(stack.url, '/External/Spin?turns=many');
    const id = await eventually(() => slowlogIdOf(sandbox, 'Spin'), 5000, 'the slowlog entry');
    const file = join(sandbox.controllers, 'Spin.ts');
    const slow = eventOf(sandbox, id, 'Slow controller call')!;
    expect(slow).to.match(
      /\[warn\] \[req [^\]]+\] Slow controller call: Spin \(.*Spin\.ts\) in GET \/External\/Spin\?turns=many has run 1\.\d s, worker \d+; stack:/,
    );
    const frames = slow
      .split('\n')
      .slice(1)
      .map((line) => line.trim());
    expect(frames).to.deep.equal([`spinForever ${file}:${LOOP_LINE}`, `handler ${file}:${HANDLER_LINE}`]);

    // The proxy answers 504 at the limit, with the id the host logged under.
    const answer = await reply;
    expect(answer.status).to.equal(504);
    expect(answer.headers['x-request-id']).to.equal(id);
    const killed = await eventually(() => eventOf(sandbox, id, 'was killed with its worker'), 8000, 'the stack at the kill');
    expect(killed).to.contain(`\n    spinForever ${file}:${LOOP_LINE}\n`);
  });
});

describe('the slowlog off by default (no --slowlog-timeout given)', function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Sleepy.ts'), SLEEPY);
    stack = await startStack(sandbox, ['--workers', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('writes no entry for a call that runs 2.5 s', async function () {
    const reply = await get(stack.url, '/External/Sleepy');
    expect(reply.status).to.equal(200);
    // Every host.log event of the request is written once the stack stops (the primary drains its log).
    await stack.stop();
    expect(readHostEvents(sandbox).filter((event) => event.includes('Slow controller call'))).to.deep.equal([]);
    expect(readHostEvents(sandbox).some((event) => event.includes('Loaded controller Sleepy'))).to.equal(true);
  });
});
