// Controller names that resolve to something on a plain object (`__proto__`, `constructor`…), asked for as
// missing names and served by real files of those names, then the status pages scraped while workers retire
// and one is killed: the host's counters and the pages built from them stay whole, and never go down.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { total } from '../helpers/metrics.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const HOSTILE_NAMES = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];
/** Served by a real file each: rows named so must exist. */
const HOSTILE_FILES = ['__proto__', 'constructor'];

interface HostStatus {
  pid: number;
  workers: number;
  acceptedRequests: number;
  controllers: Record<string, { requests: number; loadFailures: number }>;
}

describe('controller names that are Object.prototype members', function () {
  let sandbox: Sandbox;
  let stack: Running;

  const scrape = async () => {
    const [metrics, auto, json] = await Promise.all([
      get(stack.url, '/metrics'),
      get(stack.url, '/server-status?auto'),
      get(stack.url, '/server-status?json'),
    ]);
    expect([metrics.status, auto.status, json.status]).to.deep.equal([200, 200, 200]);
    expect(total(metrics.body, 'extqs_host_up')).to.equal(1);
    expect(auto.body).not.to.match(/HostWorkers: .*unknown/);
    const host = (JSON.parse(json.body) as { hosts: { summary?: HostStatus; error?: string }[] }).hosts[0];
    expect(host.error, 'the host /status error').to.equal(undefined);
    return { metrics: metrics.body, host: host.summary! };
  };

  before(async function () {
    sandbox = makeSandbox();
    for (const name of HOSTILE_FILES)
      writeFileSync(join(sandbox.controllers, `${name}.ts`), `export default () => ({ name: '${name}' });\n`);
    // Workers retire every few requests, so the pool folds the rows of departed workers into its totals.
    stack = await startStack(sandbox, ['--workers', '2', '--max-requests', '5', '--proxy-workers', '2']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('counts them as rows of their own (files) or under (missing) (no file), through retirements and a killed worker', async function () {
    this.timeout(60_000);
    const missing = HOSTILE_NAMES.filter((name) => !HOSTILE_FILES.includes(name));
    for (let round = 0; round < 4; round++) {
      for (const name of missing) expect((await get(stack.url, `/External/${name}`)).status, name).to.equal(500);
      for (const name of HOSTILE_FILES) {
        const reply = await get(stack.url, `/External/${name}`);
        expect(reply.status, name).to.equal(200);
        expect(JSON.parse(reply.body)).to.deep.equal({ name });
      }
    }
    // 24 requests at 5 per worker: one of the first two workers at least took 5 and retires, handing its
    // counts over as it exits (once the proxy has let go of its idle connections, within 10 s).
    const hostPid = (await scrape()).host.pid;
    const retired = await eventually(
      () => {
        const pids = readLog(sandbox, 'host.log').flatMap((l) => /Recycling worker (\d+)/.exec(l)?.[1] ?? []);
        return pids.length >= 1 ? pids.map(Number) : undefined;
      },
      10_000,
      'a worker recycled',
    );
    await eventually(
      () => (retired.some((pid) => workersOf(hostPid).includes(pid)) ? undefined : true),
      20_000,
      'the retired workers to exit',
    );
    const first = await scrape();
    for (const name of HOSTILE_FILES) {
      expect(Object.hasOwn(first.host.controllers, name), name).to.equal(true);
      expect(first.host.controllers[name].requests, name).to.equal(4);
      expect(total(first.metrics, 'extqs_host_controller_requests_total', { controller: name }), name).to.equal(4);
    }
    expect(first.host.controllers['(missing)']).to.include({ requests: 4 * missing.length, loadFailures: 4 * missing.length });
    expect(Object.keys(first.host.controllers)).to.have.members([...HOSTILE_FILES, '(missing)']);
    expect(first.host.acceptedRequests).to.equal(24);

    // A worker killed outright hands nothing over: what /status last showed of it is kept, so no total falls.
    for (const name of HOSTILE_FILES) await get(stack.url, `/External/${name}`);
    const before = await scrape();
    // One that is not retiring: a retiring worker's exit is no unexpected one (no "exited" line). Every request,
    // the missing controllers' too, counts towards a worker's --max-requests now that it answers them.
    const recycled = readLog(sandbox, 'host.log').flatMap((l) => /Recycling worker (\d+)/.exec(l)?.[1] ?? []);
    const victim = workersOf(hostPid).find((pid) => !recycled.includes(String(pid)))!;
    process.kill(victim, 'SIGKILL');
    await eventually(() => (readLog(sandbox, 'host.log').some((l) => l.includes(`Worker ${victim} exited`)) ? true : undefined), 10_000);
    const after = await scrape();
    expect(after.host.pid, 'the host primary survived').to.equal(hostPid);
    expect(after.host.acceptedRequests).to.be.at.least(before.host.acceptedRequests);
    for (const name of HOSTILE_FILES) {
      expect(after.host.controllers[name].requests, name).to.be.at.least(before.host.controllers[name].requests);
      expect(total(after.metrics, 'extqs_host_controller_requests_total', { controller: name })).to.be.at.least(
        total(before.metrics, 'extqs_host_controller_requests_total', { controller: name })!,
      );
    }
    expect(total(after.metrics, 'extqs_host_requests_total')).to.be.at.least(total(before.metrics, 'extqs_host_requests_total')!);
    // And the stack still serves.
    expect((await get(stack.url, '/External/constructor')).status).to.equal(200);
  });

  /** The workers of the host pool `hostPid`, from /proc. */
  function workersOf(hostPid: number): number[] {
    return readFileSync(`/proc/${hostPid}/task/${hostPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  }
});
