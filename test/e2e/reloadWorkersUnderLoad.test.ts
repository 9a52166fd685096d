// SIGHUPs that replace the proxy's workers under load (nginx -s reload): a steady load of keep-alive
// connections, half to a static file and half through the host to a controller, runs across a SIGHUP
// that changes --proxy-workers 2 -> 3, a proxy limit (--max-header-fields), --workers 2 -> 3 and a host
// limit (--max-requests: both host workers replaced, a third started), then one that changes
// --proxy-workers 3 -> 2, --workers 3 -> 2 and another limit (--limit-request-body). New workers start first and the old
// ones finish what they hold: no request fails, each has its access line, and the new limits answer.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { total } from '../helpers/metrics.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';
import { steadyLoad } from '../helpers/steadyLoad.ts';

const CONNECTIONS = 30;
/** Request n's path, half static, half through the host, and the body each answers before and after the reloads. */
const pathOf = (n: number) => (n % 2 === 0 ? `/hello.txt?n=${n}` : `/External/Live?n=${n}`);
const bodyOf = (n: number) => (n % 2 === 0 ? 'hello\n' : 'live');
/** Answers between two SIGHUPs, so each one lands in the middle of the load. */
const BETWEEN = 300;

describe('replacing the proxy workers under load', function () {
  this.timeout(120_000);
  let sandbox: Sandbox;
  let stack: Running;
  const conf = () => join(sandbox.dir, 'extqs.conf');

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.www, 'public', 'hello.txt'), 'hello\n');
    // A few milliseconds in the controller, so the old workers hold requests when they are told to retire.
    writeFileSync(
      join(sandbox.controllers, 'Live.ts'),
      `export default async () => { await new Promise((r) => setTimeout(r, 5)); return 'live'; };\n`,
    );
    writeFileSync(conf(), 'EXTQS_PROXY_WORKERS=2\nEXTQS_WORKERS=2\n');
    stack = await startStack(sandbox, ['--config', conf()]);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('fails no request and logs every one across SIGHUPs that change --proxy-workers, --workers and limits', async function () {
    // Half static, half through the host; each connection sends again 5 ms after its answer, so some sit idle
    // when a worker retires.
    const load = steadyLoad(stack.url, CONNECTIONS, pathOf, 5);
    const { samples } = load;
    const answers = (count: number) => load.answers(count);
    const retired = (count: number) =>
      eventually(
        () => (readLog(sandbox, 'error.log').filter((l) => l.includes(' retired: ')).length >= count ? true : undefined),
        30_000,
        `${count} retired workers`,
      );
    const workers = async () => total((await get(stack.url, '/metrics')).body, 'extqs_proxy_workers');
    const hostWorkers = async () => total((await get(stack.url, '/metrics')).body, 'extqs_host_total_processes');
    const fields = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`x-field-${i}`, 'x']));

    try {
      await answers(BETWEEN);
      expect((await get(stack.url, '/hello.txt', { headers: fields })).status, 'before: 60 fields pass').to.equal(200);
      writeFileSync(conf(), 'EXTQS_PROXY_WORKERS=3\nEXTQS_WORKERS=3\nEXTQS_MAX_HEADER_FIELDS=50\nEXTQS_MAX_REQUESTS=5000\n');
      stack.child.kill('SIGHUP');
      // Both first workers replaced, one more started; both host workers replaced too, and a third started.
      await retired(2);
      await eventually(
        () => (readLog(sandbox, 'host.log').filter((l) => l.includes('(new settings from SIGHUP)')).length === 2 ? true : undefined),
        10_000,
        'both host workers replaced',
      );
      await eventually(async () => ((await workers()) === 3 ? true : undefined), 10_000, 'three proxy workers');
      await eventually(async () => ((await hostWorkers()) === 3 ? true : undefined), 10_000, 'three host workers');
      for (let turn = 0; turn < 3; turn++)
        expect((await get(stack.url, '/hello.txt', { headers: fields })).status, 'after: 60 fields refused').to.equal(400);
      await answers(samples.length + BETWEEN);

      writeFileSync(
        conf(),
        'EXTQS_PROXY_WORKERS=2\nEXTQS_WORKERS=2\nEXTQS_MAX_HEADER_FIELDS=50\nEXTQS_MAX_REQUESTS=5000\nEXTQS_LIMIT_REQUEST_BODY=1k\n',
      );
      stack.child.kill('SIGHUP');
      // One retired without a successor, two replaced.
      await retired(5);
      await eventually(async () => ((await workers()) === 2 ? true : undefined), 10_000, 'two proxy workers');
      await eventually(async () => ((await hostWorkers()) === 2 ? true : undefined), 10_000, 'two host workers');
      for (let turn = 0; turn < 2; turn++)
        expect((await get(stack.url, '/hello.txt', { method: 'POST', body: 'x'.repeat(2048) })).status, 'past the new body limit').to.equal(
          413,
        );
      await answers(samples.length + BETWEEN);
    } finally {
      await load.stop();
    }

    // A 200 is not enough: each answer must be what its path answers, whichever worker gave it.
    const failed = samples.filter((s) => s.status !== 200 || s.body !== bodyOf(s.n));
    expect(failed, `failed requests: ${JSON.stringify(failed.slice(0, 5))}`).to.deep.equal([]);
    const note = readLog(sandbox, 'error.log').filter((l) => l.includes('SIGHUP received'));
    expect(note[0], note[0]).to.contain('applied --workers 2 -> 3');
    expect(note[1], note[1]).to.contain('applied --workers 3 -> 2');
    expect(note[0], note[0]).to.contain(
      'applied by starting new workers: --proxy-workers 2 -> 3, --max-requests 0 -> 5000, --max-header-fields 100 -> 50',
    );
    expect(note[1], note[1]).to.contain('applied by starting new workers: --proxy-workers 3 -> 2, --limit-request-body 1073741824 -> 1024');
    // Every request's access line: the retiring workers handed theirs to the primary before they exited.
    const logged = await eventually(
      () => {
        const ns = readLog(sandbox, 'access.log').flatMap((line) => /[?&]n=(\d+)/.exec(line)?.[1] ?? []);
        return ns.length >= samples.length ? ns : undefined;
      },
      10_000,
      'an access line for every request',
    );
    expect(logged.map(Number).sort((a, b) => a - b)).to.deep.equal(samples.map((s) => s.n).sort((a, b) => a - b));
    // The retired workers' counts stay in /metrics: one request counted per access line (the scrape's own comes after).
    const counted = total((await get(stack.url, '/metrics')).body, 'extqs_http_requests_total');
    await eventually(
      () => (readLog(sandbox, 'access.log').length === counted! + 1 ? true : undefined),
      10_000,
      `${counted} + 1 access lines`,
    );
  });
});
