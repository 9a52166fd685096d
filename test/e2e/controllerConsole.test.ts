// A controller's console output, captured into host.log as php-fpm's catch_workers_output does: each line at
// its level, with the request id and the controller's name, and a flood bounded without stalling the worker
// (docs/logs.md, "A controller's console output").
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readHostEvents, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const BURST = 200;
const PER_SECOND = 100;
const FLOOD = 100_000;

describe("a controller's console output", function () {
  let sandbox: Sandbox;
  let stack: Running;
  const write = (file: string, source: string) => writeFileSync(join(sandbox.controllers, file), source);

  beforeEach(async function () {
    sandbox = makeSandbox();
    // One worker, so the flood's bucket is the one every later request meets.
    stack = await startStack(sandbox, ['--workers', '1']);
  });

  afterEach(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('goes to host.log at its level, with the request id and the controller name, not to the launcher', async function () {
    write(
      'Chatty.ts',
      [
        "console.log('module body of Chatty');",
        'export default () => {',
        "  console.log('hello', { a: 1 });",
        "  console.error('it failed:', new Error('nope').message);",
        "  console.warn('careful %d', 3);",
        "  return 'ok';",
        '};',
        '',
      ].join('\n'),
    );
    const reply = await get(stack.url, '/External/Chatty');
    expect(reply.status).to.equal(200);
    const id = reply.headers['x-request-id'] as string;
    expect(id).to.match(/^[0-9a-f-]{36}$/);
    const events = await eventually(
      () => {
        const found = readHostEvents(sandbox).filter((e) => e.includes('[Chatty]'));
        return found.length >= 4 ? found : undefined;
      },
      5000,
      'the console lines in host.log',
    );
    expect(events.find((e) => e.includes('hello'))).to.match(new RegExp(`\\] \\[info\\] \\[req ${id}\\] \\[Chatty\\] hello \\{ a: 1 \\}$`));
    expect(events.find((e) => e.includes('it failed'))).to.match(
      new RegExp(`\\] \\[error\\] \\[req ${id}\\] \\[Chatty\\] it failed: nope$`),
    );
    expect(events.find((e) => e.includes('careful'))).to.match(new RegExp(`\\] \\[warn\\] \\[req ${id}\\] \\[Chatty\\] careful 3$`));
    // The module body runs at load, outside any request: tagged with its controller, no request id.
    expect(events.find((e) => e.includes('module body'))).to.match(/\] \[info\] \[req -\] \[Chatty\] module body of Chatty$/);
    expect(stack.stdout()).not.to.contain('hello');
    expect(stack.stderr()).not.to.contain('it failed');
  });

  it('catches process.stdout and process.stderr writes: 1 GB written leaves the worker answering and the launcher untouched', async function () {
    this.timeout(60_000);
    write(
      'Printer.ts',
      [
        'export default () => {',
        "  const megabyte = 'y'.repeat(1024 * 1024);",
        "  process.stderr.write('printed to stderr\\n');",
        '  for (let i = 0; i < 1024; i += 1) process.stdout.write(megabyte);',
        "  return 'printed';",
        '};',
        '',
      ].join('\n'),
    );
    write('Quiet.ts', `export default () => 'still here';\n`);
    const printed = await get(stack.url, '/External/Printer');
    expect(printed.status).to.equal(200);
    expect(printed.body).to.equal('printed');
    expect((await get(stack.url, '/External/Quiet')).body).to.equal('still here');
    const id = printed.headers['x-request-id'] as string;
    const events = await eventually(
      () => {
        const found = readHostEvents(sandbox).filter((e) => e.includes('[Printer]'));
        const megabytes = found.filter((e) => e.includes('yyyy')).length;
        return found.some((e) => e.includes('printed to stderr')) && megabytes >= BURST - 1 ? found : undefined;
      },
      5000,
      'the stderr line and the burst of stdout writes in host.log',
    );
    expect(events.find((e) => e.includes('printed to stderr'))).to.match(
      new RegExp(`\\] \\[error\\] \\[req ${id}\\] \\[Printer\\] printed to stderr$`),
    );
    // Each megabyte is one event, cut to php-fpm's log_limit: the bucket keeps its burst, and no event holds the megabyte.
    const kept = events.filter((e) => e.includes('[info]') && e.includes('yyyy'));
    expect(kept.length).to.be.at.least(BURST - 1);
    expect(kept[0]).to.match(new RegExp(`\\[req ${id}\\] \\[Printer\\] y{1024}… \\(1047552 more characters dropped\\)$`));
    expect(readLog(sandbox, 'host.log').some((line) => /Worker \d+ exited/.test(line))).to.equal(false);
    expect(stack.stdout()).not.to.contain('yyyy');
    expect(stack.stderr()).not.to.contain('printed to stderr');
  });

  it(`keeps a flood of ${FLOOD.toLocaleString('en')} lines to the bucket, says how many it dropped, and keeps answering`, async function () {
    write('Flood.ts', `export default () => { for (let i = 0; i < ${FLOOD}; i += 1) console.log('line', i); return 'flooded'; };\n`);
    write('Quiet.ts', `export default () => 'still here';\n`);
    const started = Date.now();
    const flooded = await get(stack.url, '/External/Flood');
    const seconds = (Date.now() - started) / 1000;
    expect(flooded.body).to.equal('flooded');
    expect((await get(stack.url, '/External/Quiet')).body).to.equal('still here');
    const dropped = await eventually(
      () =>
        readLog(sandbox, 'host.log')
          .map((line) => /\[warn\] \[req -\] (\d+) console lines dropped/.exec(line)?.[1])
          .find(Boolean),
      5000,
      'the dropped line',
    );
    const kept = readLog(sandbox, 'host.log').filter((line) => / \[Flood\] line \d+$/.test(line)).length;
    // The bucket's burst, plus what it refilled while the loop ran (the request's time bounds the loop's).
    expect(kept).to.be.at.least(BURST);
    expect(kept).to.be.at.most(BURST + Math.ceil(PER_SECOND * seconds) + 1);
    expect(kept + Number(dropped)).to.equal(FLOOD);
  });
});
