// The pm modes' decisions alone (host/pool/pmPolicy.ts): what a pool starts and stops, from counts and settings.
import { expect } from 'chai';
import {
  belowConcurrency,
  canTakeRequest,
  idleLongestFirst,
  initialWorkers,
  keepsSpare,
  maintains,
  maintenance,
  MAX_SPAWN_RATE,
  onWaiting,
  quietSince,
  resize,
  sparesToStart,
  sparesToStop,
  type MaintenanceInput,
  type PmSettings,
} from '../../host/pool/pmPolicy.ts';

const settings: PmSettings = {
  workers: 8,
  startWorkers: 2,
  minSpareWorkers: 2,
  maxSpareWorkers: 4,
  workerIdleTimeout: 10,
  workerConcurrency: 0,
  spareWorkers: 0,
};

const idle = (...sinces: number[]) => sinces.map((since, i) => ({ worker: `w${i}`, since, available: true }));

function input(more: Partial<MaintenanceInput<string>>): MaintenanceInput<string> {
  return { pm: 'dynamic', settings, now: 100_000, idle: [], available: 0, starting: 0, serving: 2, spawnRate: 1, ...more };
}

describe('the pm modes (host/pool/pmPolicy.ts)', function () {
  it('starts static with --workers, dynamic with --start-workers, ondemand with none', function () {
    expect(initialWorkers('static', settings)).to.equal(8);
    expect(initialWorkers('dynamic', settings)).to.equal(2);
    expect(initialWorkers('ondemand', settings)).to.equal(0);
  });

  it('maintains dynamic and ondemand pools, not static ones', function () {
    expect(maintains('static')).to.equal(false);
    expect(maintains('dynamic')).to.equal(true);
    expect(maintains('ondemand')).to.equal(true);
  });

  it('is ready with a worker that can take a request, or always in ondemand (a request starts one)', function () {
    expect(canTakeRequest('static', 0)).to.equal(false);
    expect(canTakeRequest('dynamic', 1)).to.equal(true);
    expect(canTakeRequest('ondemand', 0)).to.equal(true);
  });

  it('counts a worker as available below --worker-concurrency (0: no limit) and not blocked', function () {
    expect(belowConcurrency({ blocked: false, inFlight: 100 }, 0)).to.equal(true);
    expect(belowConcurrency({ blocked: false, inFlight: 1 }, 2)).to.equal(true);
    expect(belowConcurrency({ blocked: false, inFlight: 2 }, 2)).to.equal(false);
    expect(belowConcurrency({ blocked: true, inFlight: 0 }, 0)).to.equal(false);
  });

  describe('a request with no free worker', function () {
    const counts = { starting: 0, queued: 1, serving: 1, workers: 2 };
    it('starts a worker in ondemand, one per waiting request that no starting worker takes', function () {
      expect(onWaiting('ondemand', counts)).to.equal('start');
      expect(onWaiting('ondemand', { ...counts, starting: 1 })).to.equal('start');
      expect(onWaiting('ondemand', { ...counts, starting: 2 })).to.equal('nothing');
    });
    it('reaches max_children at --workers', function () {
      expect(onWaiting('ondemand', { ...counts, serving: 2 })).to.equal('at max children');
    });
    it('starts nothing in static and dynamic (their maintenance does)', function () {
      expect(onWaiting('static', counts)).to.equal('nothing');
      expect(onWaiting('dynamic', counts)).to.equal('nothing');
    });
  });

  describe('idle time', function () {
    it('starts again when the worker ran something or its count moved, and stays while it is quiet', function () {
      const first = quietSince(undefined, { requests: 3, inFlight: 0 }, 10);
      expect(first).to.deep.equal({ requests: 3, since: 10 });
      expect(quietSince(first, { requests: 3, inFlight: 0 }, 20)).to.equal(first);
      expect(quietSince(first, { requests: 4, inFlight: 0 }, 20)).to.deep.equal({ requests: 4, since: 20 });
      const running = quietSince(first, { requests: 4, inFlight: 1 }, 30);
      expect(running).to.deep.equal({ requests: 4, since: Infinity });
      expect(quietSince(running, { requests: 4, inFlight: 0 }, 40)).to.deep.equal({ requests: 4, since: 40 });
      // Running something with the same count: not quiet.
      expect(quietSince(first, { requests: 3, inFlight: 1 }, 50)).to.deep.equal({ requests: 3, since: Infinity });
    });

    it('lists the workers running nothing, idle longest first, by the later of the relay and the worker', function () {
      const listed = idleLongestFirst([
        { worker: 'busy', inFlight: 1, blocked: false, idleSince: 0, quiet: undefined },
        { worker: 'recent', inFlight: 0, blocked: false, idleSince: 50, quiet: 10 },
        { worker: 'old', inFlight: 0, blocked: true, idleSince: 5, quiet: 20 },
        { worker: 'directly busy', inFlight: 0, blocked: false, idleSince: 5, quiet: Infinity },
        { worker: 'unasked', inFlight: 0, blocked: false, idleSince: 30, quiet: undefined },
      ]);
      expect(listed).to.deep.equal([
        { worker: 'old', since: 20, available: false },
        { worker: 'unasked', since: 30, available: true },
        { worker: 'recent', since: 50, available: true },
      ]);
    });
  });

  describe('ondemand maintenance', function () {
    it('stops the worker idle longest once past --worker-idle-timeout, one at a time', function () {
      expect(maintenance(input({ pm: 'ondemand', idle: idle(89_000, 95_000) })).stop).to.deep.equal({
        worker: 'w0',
        why: 'idle more than 10 s',
      });
      expect(maintenance(input({ pm: 'ondemand', idle: idle(90_000) })).stop).to.equal(undefined);
      expect(maintenance(input({ pm: 'ondemand', idle: [] })).stop).to.equal(undefined);
    });
    it('starts nothing, and has room again once a worker is available', function () {
      const d = maintenance(input({ pm: 'ondemand', available: 1, spawnRate: 4 }));
      expect(d).to.deep.equal({ start: 0, atMaxChildren: false, hasRoom: true, spawnRate: 4 });
      expect(maintenance(input({ pm: 'ondemand', available: 0 })).hasRoom).to.equal(false);
      // Not counting the worker it stops.
      expect(maintenance(input({ pm: 'ondemand', idle: idle(0), available: 1 }))).to.include({ hasRoom: false });
      expect(maintenance(input({ pm: 'ondemand', idle: idle(0), available: 2 }))).to.include({ hasRoom: true });
      const blockedIdle = [{ worker: 'w0', since: 0, available: false }];
      expect(maintenance(input({ pm: 'ondemand', idle: blockedIdle, available: 1 }))).to.include({ hasRoom: true });
    });
  });

  describe('dynamic maintenance', function () {
    it('stops the worker idle longest when more than --max-spare-workers are idle, and resets the spawn rate', function () {
      const d = maintenance(input({ idle: idle(1, 2, 3, 4, 5), available: 5, serving: 5, spawnRate: 8 }));
      expect(d).to.deep.equal({
        stop: { worker: 'w0', why: 'more than 4 idle' },
        start: 0,
        atMaxChildren: false,
        hasRoom: false,
        spawnRate: 1,
      });
    });
    it('keeps --max-spare-workers idle workers', function () {
      expect(maintenance(input({ idle: idle(1, 2, 3, 4), available: 4, serving: 4 })).stop).to.equal(undefined);
    });
    it('starts nothing with --min-spare-workers spare (available or starting)', function () {
      expect(maintenance(input({ available: 1, starting: 1, spawnRate: 8 }))).to.deep.equal({
        start: 0,
        atMaxChildren: false,
        hasRoom: true,
        spawnRate: 1,
      });
    });
    it('starts the missing spares at the spawn rate, which doubles up to MAX_SPAWN_RATE', function () {
      const big = { ...settings, workers: 1000, minSpareWorkers: 100 };
      expect(maintenance(input({ settings: big, spawnRate: 1 }))).to.include({ start: 1, spawnRate: 2 });
      expect(maintenance(input({ settings: big, spawnRate: 4 }))).to.include({ start: 4, spawnRate: 8 });
      expect(maintenance(input({ settings: big, spawnRate: MAX_SPAWN_RATE }))).to.include({ start: 32, spawnRate: 32 });
      // No more than are missing, nor than --workers leaves room for.
      expect(maintenance(input({ available: 1, spawnRate: 8 }))).to.include({ start: 1, spawnRate: 16 });
      expect(maintenance(input({ settings: { ...settings, minSpareWorkers: 5 }, serving: 7, spawnRate: 8 }))).to.include({ start: 1 });
    });
    it('reaches max_children when short of spares at --workers, the spawn rate kept', function () {
      expect(maintenance(input({ serving: 8, spawnRate: 4 }))).to.deep.equal({
        start: 0,
        atMaxChildren: true,
        hasRoom: false,
        spawnRate: 4,
      });
    });
  });

  it('does nothing in static maintenance', function () {
    expect(maintenance(input({ pm: 'static', idle: idle(0, 0, 0, 0, 0, 0) }))).to.deep.equal({
      start: 0,
      atMaxChildren: false,
      hasRoom: false,
      spawnRate: 1,
    });
  });

  describe('a new --workers after SIGHUP', function () {
    it('stops the workers past it, idle ones first', function () {
      expect(resize('dynamic', 2, ['a', 'b', 'c', 'd'], new Set(['c']))).to.deep.equal({ stop: ['b', 'd'], start: 0 });
      expect(resize('static', 3, ['a', 'b', 'c', 'd'], new Set())).to.deep.equal({ stop: ['d'], start: 0 });
    });
    it('fills a static pool to it; dynamic and ondemand start theirs as they need them', function () {
      expect(resize('static', 5, ['a', 'b'], new Set())).to.deep.equal({ stop: [], start: 3 });
      expect(resize('dynamic', 5, ['a', 'b'], new Set())).to.deep.equal({ stop: [], start: 0 });
      expect(resize('ondemand', 5, [], new Set())).to.deep.equal({ stop: [], start: 0 });
    });
  });

  it('keeps --spare-workers spares: starts the missing ones, stops the ones past it', function () {
    expect(sparesToStart(0, 2)).to.equal(2);
    expect(sparesToStart(3, 2)).to.equal(0);
    expect(sparesToStop(['a', 'b', 'c'], 1)).to.deep.equal(['b', 'c']);
    expect(sparesToStop(['a'], 1)).to.deep.equal([]);
    expect(keepsSpare(2, 2)).to.equal(true);
    expect(keepsSpare(3, 2)).to.equal(false);
  });
});
