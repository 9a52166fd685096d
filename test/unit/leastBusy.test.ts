// The routing decision alone: which worker takes a request, whether it waits, or is refused.
import { expect } from 'chai';
import { leastBusy, route, type RouteCandidate } from '../../common/leastBusy.ts';

const worker = (name: string, inFlight: number, more: Partial<RouteCandidate> = {}) => ({
  name,
  inFlight,
  blocked: false,
  accepting: true,
  ...more,
});

describe('least-busy routing (common/leastBusy.ts)', function () {
  it('sends to the worker with the fewest requests in flight, the first listed on a tie', function () {
    expect(leastBusy([worker('a', 3), worker('b', 1), worker('c', 2)], 0)?.name).to.equal('b');
    expect(leastBusy([worker('a', 2), worker('b', 2)], 0)?.name).to.equal('a');
  });

  it('never chooses a blocked worker, nor one that retires, however idle', function () {
    const workers = [worker('spinning', 0, { blocked: true }), worker('retiring', 0, { accepting: false }), worker('busy', 40)];
    expect(leastBusy(workers, 0)?.name).to.equal('busy');
    expect(leastBusy([worker('spinning', 0, { blocked: true })], 0)).to.equal(undefined);
  });

  it('skips a worker at --worker-concurrency; 0 is no limit', function () {
    expect(leastBusy([worker('a', 1), worker('b', 1)], 1)).to.equal(undefined);
    expect(leastBusy([worker('a', 2), worker('b', 3)], 3)?.name).to.equal('a');
    expect(leastBusy([worker('a', 10_000)], 0)?.name).to.equal('a');
  });

  it('queues when no worker can take it, up to the bound, and refuses past it', function () {
    const full = [worker('a', 1)];
    expect(route(full, 1, 0, 2)).to.deep.equal({ wait: true });
    expect(route(full, 1, 1, 2)).to.deep.equal({ wait: true });
    expect(route(full, 1, 2, 2)).to.deep.equal({ refuse: true });
    // --listen-backlog 0: nothing waits.
    expect(route(full, 1, 0, 0)).to.deep.equal({ refuse: true });
  });

  it('keeps the queue first in, first out: a new request waits behind queued ones even when a worker has room', function () {
    expect(route([worker('a', 0)], 1, 1, 10)).to.deep.equal({ wait: true });
    expect(route([worker('a', 0)], 1, 0, 10)).to.deep.equal({ send: worker('a', 0) });
  });
});
