import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { DROP_GRACE_MS, ExecutionLimit, type Tracked } from '../../host/executionLimit.ts';

describe('the execution limit', () => {
  let dir: string;
  let limit: ExecutionLimit;
  let watchdogLog: number;
  const overruns: string[] = [];
  const call = (name: string, startedAt: number): Tracked => ({
    name,
    file: `${name}.ts`,
    requestId: name,
    what: 'GET /',
    startedAt,
    onOverrun: () => {},
  });
  const waitForChecks = () => new Promise((r) => setTimeout(r, 250));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'extqs-limit-'));
    overruns.length = 0;
    watchdogLog = openSync(join(dir, 'watchdog.log'), 'a');
    limit = new ExecutionLimit(200, watchdogLog, {
      overrun: (t) => overruns.push(t.name),
      watchdogFailed: (err) => {
        throw err;
      },
      tableFull: () => {},
    });
  });

  afterEach(async () => {
    await limit.close();
    closeSync(watchdogLog);
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports a call that is still running at the limit, once', async () => {
    const slow = call('slow', Date.now() - 1000);
    limit.track(slow);
    await waitForChecks();
    await waitForChecks();
    expect(overruns).to.deep.equal(['slow']);
  });

  it('does not report a call released in time', async () => {
    const quick = call('quick', Date.now());
    limit.track(quick);
    limit.release(quick);
    await waitForChecks();
    expect(overruns).to.deep.equal([]);
  });

  it("keeps timing a new call when an overrun call's late release comes after its slot was reused", async () => {
    const late = call('late', Date.now() - 1000);
    limit.track(late);
    await waitForChecks(); // `late` overruns; its slot is free again
    const next = call('next', Date.now());
    limit.track(next); // takes the freed slot
    limit.release(late); // the overrun call finally settles: must not free `next`
    await new Promise((r) => setTimeout(r, 200 + DROP_GRACE_MS + 200));
    expect(overruns).to.deep.equal(['late', 'next']);
  });
});
