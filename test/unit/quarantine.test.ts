import { expect } from 'chai';
import { QuarantineGate } from '../../host/worker/quarantineGate.ts';
import { Quarantine, QUARANTINE_DEATHS, QUARANTINE_FOR_MS, QUARANTINE_WITHIN_MS } from '../../host/pool/quarantine.ts';

describe('the quarantine of a controller that kills its workers', function () {
  const killed = (controller: string) => ({ controller, inFlight: [controller] });
  const unknown = (...inFlight: string[]) => ({ controller: undefined, inFlight });

  it('holds a controller at its third attributed death within the window, for the hold time', function () {
    const q = new Quarantine();
    expect(QUARANTINE_DEATHS).to.equal(3);
    expect(q.death(0, killed('K'))).to.equal(undefined);
    expect(q.death(1_000, killed('K'))).to.equal(undefined);
    expect(q.until('K', 1_500)).to.equal(undefined);
    expect(q.death(QUARANTINE_WITHIN_MS - 1, killed('K'))).to.deep.equal({
      controller: 'K',
      until: QUARANTINE_WITHIN_MS - 1 + QUARANTINE_FOR_MS,
      reason: 'attributed',
    });
    const until = QUARANTINE_WITHIN_MS - 1 + QUARANTINE_FOR_MS;
    expect(q.until('K', until - 1)).to.equal(until);
    expect(q.active(until - 1)).to.deep.equal([{ controller: 'K', until }]);
    expect(q.until('K', until)).to.equal(undefined);
    expect(q.active(until)).to.deep.equal([]);
  });

  it('lists no controller whose hold has ended, asked at its end', function () {
    const q = new Quarantine();
    for (const at of [0, 1, 2]) q.death(at, killed('K'));
    expect(q.active(2 + QUARANTINE_FOR_MS - 1)).to.deep.equal([{ controller: 'K', until: 2 + QUARANTINE_FOR_MS }]);
    expect(q.active(2 + QUARANTINE_FOR_MS)).to.deep.equal([]);
  });

  it('forgets the deaths of no known cause too when its files change', function () {
    const q = new Quarantine();
    q.death(0, unknown('A'));
    q.death(1, unknown('A'));
    expect(q.lift('A'), 'not held yet').to.equal(false);
    expect(q.death(2, unknown('A')), 'its count starts again').to.equal(undefined);
  });

  it('does not count deaths older than the window', function () {
    const q = new Quarantine();
    q.death(0, killed('K'));
    q.death(5_000, killed('K'));
    expect(q.death(QUARANTINE_WITHIN_MS, killed('K'))).to.equal(undefined);
    expect(q.death(QUARANTINE_WITHIN_MS + 1, killed('K'))?.controller).to.equal('K');
  });

  it("counts each controller's deaths apart", function () {
    const q = new Quarantine();
    q.death(0, killed('A'));
    q.death(1, killed('B'));
    expect(q.death(2, killed('A'))).to.equal(undefined);
    expect(q.until('B', 3)).to.equal(undefined);
  });

  it('holds the only controller in flight at three deaths of no known cause', function () {
    const q = new Quarantine();
    expect(q.death(0, unknown('M', 'M'))).to.equal(undefined);
    expect(q.death(1, unknown('M'))).to.equal(undefined);
    expect(q.death(2, unknown('M'))).to.deep.equal({ controller: 'M', until: 2 + QUARANTINE_FOR_MS, reason: 'alone' });
  });

  it('blames nobody for a death of no known cause with several controllers in flight, or none', function () {
    const q = new Quarantine();
    for (let at = 0; at < 5; at++) expect(q.death(at, unknown('M', 'N'))).to.equal(undefined);
    for (let at = 5; at < 10; at++) expect(q.death(at, unknown())).to.equal(undefined);
    expect(q.active(10)).to.deep.equal([]);
    // Those did not count towards M alone.
    q.death(11, unknown('M'));
    expect(q.death(12, unknown('M'))).to.equal(undefined);
  });

  it('lifts a held controller when its files change, and forgets its past deaths', function () {
    const q = new Quarantine();
    for (let at = 0; at < 3; at++) q.death(at, killed('K'));
    expect(q.lift('K')).to.equal(true);
    expect(q.until('K', 4)).to.equal(undefined);
    expect(q.lift('K')).to.equal(false);
    q.death(5, killed('K'));
    expect(q.death(6, killed('K'))).to.equal(undefined);
    expect(q.death(7, killed('K'))?.controller).to.equal('K');
  });

  it('hands on the files its attributed deaths named, and forgets them when lifted', function () {
    const q = new Quarantine();
    q.death(0, killed('K'));
    q.death(1, { ...killed('K'), files: ['/c/K.ts', '/c/lib/k.ts'] });
    expect(q.death(2, killed('K'))?.files).to.deep.equal(['/c/K.ts', '/c/lib/k.ts']);
    expect(q.active(3)).to.deep.equal([{ controller: 'K', until: 2 + QUARANTINE_FOR_MS, files: ['/c/K.ts', '/c/lib/k.ts'] }]);
    q.lift('K');
    for (let at = 4; at < 7; at++) q.death(at, unknown('K'));
    expect(q.active(7)).to.deep.equal([{ controller: 'K', until: 6 + QUARANTINE_FOR_MS }]);
  });

  it('forgets past deaths once the hold ends, and does not announce a held controller twice', function () {
    const q = new Quarantine();
    for (let at = 0; at < 3; at++) q.death(at, killed('K'));
    expect(q.death(10, killed('K'))).to.equal(undefined);
    const end = 2 + QUARANTINE_FOR_MS;
    expect(q.until('K', end)).to.equal(undefined);
    expect(q.death(end + 1, killed('K'))).to.equal(undefined);
    expect(q.death(end + 2, killed('K'))).to.equal(undefined);
    expect(q.death(end + 3, killed('K'))?.until).to.equal(end + 3 + QUARANTINE_FOR_MS);
  });
});

describe("a worker's quarantine gate", function () {
  it('answers the seconds left, rounded up, until the hold ends', function () {
    const gate = new QuarantineGate([{ controller: 'K', until: 10_000 }]);
    expect(gate.retryAfter('K', 0)).to.equal(10);
    expect(gate.retryAfter('K', 8_001)).to.equal(2);
    expect(gate.retryAfter('K', 9_999)).to.equal(1);
    expect(gate.retryAfter('Other', 0)).to.equal(undefined);
    expect(gate.retryAfter('K', 10_000)).to.equal(undefined);
    expect(gate.retryAfter('K', 0)).to.equal(undefined);
  });

  it("lifts a hold when the controller's own file changes, and no other", function () {
    const gate = new QuarantineGate();
    gate.hold({ controller: 'A', until: 1_000, files: ['/c/A.ts'] });
    gate.hold({ controller: 'B', until: 1_000 });
    expect(gate.changed('C', '/c/C.ts')).to.deep.equal([]);
    expect(gate.changed('A', '/c/A.ts')).to.deep.equal(['A']);
    expect(gate.retryAfter('A', 0)).to.equal(undefined);
    expect(gate.retryAfter('B', 0)).to.equal(1);
    gate.hold({ controller: 'C', until: 1_000 });
    gate.lift('C');
    expect(gate.retryAfter('C', 0)).to.equal(undefined);
  });

  describe('when a local module changes', function () {
    it('lifts only the holds whose controller imports it', function () {
      const gate = new QuarantineGate([
        { controller: 'A', until: 1_000, files: ['/c/A.ts', '/c/lib/a.ts', '/c/lib/shared.ts'] },
        { controller: 'B', until: 1_000, files: ['/c/B.ts', '/c/lib/shared.ts'] },
        { controller: 'C', until: 1_000, files: ['/c/C.ts'] },
      ]);
      expect(gate.changed(undefined, '/c/lib/unrelated.ts')).to.deep.equal([]);
      expect(gate.changed(undefined, '/c/lib/a.ts')).to.deep.equal(['A']);
      expect(gate.retryAfter('B', 0)).to.equal(1);
      expect(gate.changed(undefined, '/c/lib/shared.ts')).to.deep.equal(['B']);
      expect(gate.retryAfter('C', 0)).to.equal(1);
    });

    it('lifts a hold whose imports are unknown (a death of no known cause blamed it), as the change may be its fix', function () {
      const gate = new QuarantineGate([
        { controller: 'Known', until: 1_000, files: ['/c/Known.ts'] },
        { controller: 'Unknown', until: 1_000 },
      ]);
      expect(gate.changed(undefined, '/c/lib/x.ts')).to.deep.equal(['Unknown']);
      expect(gate.retryAfter('Known', 0)).to.equal(1);
    });

    it('forgets the files of a lifted hold: held again without them, any module lifts it', function () {
      const gate = new QuarantineGate([{ controller: 'A', until: 1_000, files: ['/c/A.ts'] }]);
      gate.lift('A');
      gate.hold({ controller: 'A', until: 1_000 });
      expect(gate.changed(undefined, '/c/lib/x.ts')).to.deep.equal(['A']);
    });
  });
});
