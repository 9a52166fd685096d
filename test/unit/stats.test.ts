import { expect } from 'chai';
import { addDeparted, departedNone, summarize, type WorkerSnapshot } from '../../host/wire/stats.ts';
import { NO_POOL } from '../helpers/poolFields.ts';

const worker = (
  pid: number,
  state: WorkerSnapshot['state'],
  requests: number,
  controllers: WorkerSnapshot['controllers'],
): WorkerSnapshot => ({
  pid,
  state,
  requests,
  inFlight: state === 'busy' ? 1 : 0,
  lastRequest: undefined,
  lastDurationMs: undefined,
  rss: 1,
  startedAt: '2026-11-22T00:00:00.000Z',
  controllers,
});

describe('the pool status', () => {
  it('sums requests, errors and load failures per controller over the workers, and lists each version', () => {
    const a = worker(1, 'idle', 5, {
      Latest: { requests: 4, errors: 1, loadFailures: 0, reloads: 1, lastReload: '2026-11-22T01:00:00.000Z', version: 'aaa' },
    });
    const b = worker(2, 'busy', 3, {
      Latest: { requests: 2, errors: 0, loadFailures: 1, reloads: 1, lastReload: '2026-11-22T02:00:00.000Z', version: 'bbb' },
    });
    const status = summarize(9, 'start', [a, b], departedNone(), NO_POOL, false);
    expect(status.acceptedRequests).to.equal(8);
    expect(status.controllers.Latest).to.deep.equal({
      requests: 6,
      errors: 1,
      loadFailures: 1,
      reloads: 2,
      lastReload: '2026-11-22T02:00:00.000Z',
      versions: ['aaa', 'bbb'],
    });
    expect(status.states).to.deep.equal({ starting: 0, idle: 1, busy: 1, retiring: 0, unresponsive: 0 });
    expect(status).not.to.have.property('processes');
  });

  it('never goes backwards when a worker leaves: its final counters join the totals', () => {
    const departed = departedNone();
    const before = summarize(
      9,
      'start',
      [worker(1, 'idle', 7, { A: { requests: 7, errors: 2, loadFailures: 0, reloads: 1, lastReload: undefined, version: 'v' } })],
      departed,
      NO_POOL,
      false,
    );
    addDeparted(
      departed,
      worker(1, 'retiring', 7, { A: { requests: 7, errors: 2, loadFailures: 0, reloads: 1, lastReload: undefined, version: 'v' } }),
    );
    const after = summarize(
      9,
      'start',
      [worker(2, 'idle', 1, { A: { requests: 1, errors: 0, loadFailures: 0, reloads: 1, lastReload: undefined, version: 'v' } })],
      departed,
      NO_POOL,
      true,
    );
    expect(after.acceptedRequests).to.equal(8);
    expect(after.acceptedRequests).to.be.at.least(before.acceptedRequests);
    expect(after.controllers.A).to.include({ requests: 8, errors: 2, reloads: 2 });
    expect(after.processes).to.have.length(1);
  });
});
