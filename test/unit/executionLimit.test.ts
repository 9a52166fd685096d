import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mock } from 'node:test';
import { expect } from 'chai';
import { DROP_GRACE_MS, ExecutionLimit, type Tracked } from '../../host/worker/executionLimit.ts';

const LIMIT_MS = 200;

describe('the execution limit', () => {
  let dir: string;
  let limit: ExecutionLimit;
  let watchdogLog: number;
  const overruns: string[] = [];
  const call = (name: string, startedAt: number): Tracked => ({
    name,
    file: `${name}.ts`,
    requestId: name,
    version: '1',
    sourceMap: '',
    what: 'GET /',
    startedAt,
    onOverrun: () => {},
  });

  beforeEach(() => {
    // The limit's checks run on a fake clock, so a loaded machine changes nothing. The watchdog thread
    // reads the real clock: a fake one an hour ahead never looks blocked to it, nor overrun.
    mock.timers.enable({ apis: ['setInterval', 'Date'], now: Date.now() + 3_600_000 });
    dir = mkdtempSync(join(tmpdir(), 'extqs-limit-'));
    overruns.length = 0;
    watchdogLog = openSync(join(dir, 'watchdog.log'), 'a');
    limit = new ExecutionLimit(LIMIT_MS, 0, watchdogLog, {
      overrun: (t) => overruns.push(t.name),
      watchdogFailed: (err) => {
        throw err;
      },
      tableFull: () => {},
    });
  });

  afterEach(async () => {
    await limit.close();
    mock.timers.reset();
    closeSync(watchdogLog);
    rmSync(dir, { recursive: true, force: true });
  });

  /** Moves the fake clock on by `ms`, a check period at a time, as the real one would. */
  const pass = (ms: number) => {
    for (let done = 0; done < ms; done += 100) mock.timers.tick(100);
  };

  it('reports a call that is still running at the limit, once', () => {
    limit.track(call('slow', Date.now()));
    pass(LIMIT_MS + DROP_GRACE_MS - 100);
    expect(overruns, 'before the limit and its grace').to.deep.equal([]);
    pass(100);
    expect(overruns).to.deep.equal(['slow']);
    pass(10 * (LIMIT_MS + DROP_GRACE_MS));
    expect(overruns).to.deep.equal(['slow']);
  });

  it('does not report a call released in time', () => {
    const quick = call('quick', Date.now());
    limit.track(quick);
    limit.track(call('held', Date.now())); // the control: tracked the same way, never released
    limit.release(quick);
    pass(2 * (LIMIT_MS + DROP_GRACE_MS));
    expect(overruns).to.deep.equal(['held']);
  });

  it("keeps timing a new call when an overrun call's late release comes after its slot was reused", () => {
    const late = call('late', Date.now() - 1000);
    limit.track(late);
    pass(100); // `late` overruns; its slot is free again
    expect(overruns).to.deep.equal(['late']);
    const next = call('next', Date.now());
    limit.track(next); // takes the freed slot
    limit.release(late); // the overrun call finally settles: must not free `next`
    pass(LIMIT_MS + DROP_GRACE_MS);
    expect(overruns).to.deep.equal(['late', 'next']);
  });
});
