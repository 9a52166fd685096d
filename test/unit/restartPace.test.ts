import { expect } from 'chai';
import { LAUNCHER_PACE, poolPace, RestartPace } from '../../common/restartPace.ts';

describe('RestartPace', function () {
  it('replaces a pool worker at once until more than twice the workers died within 10 s, then after 1 s', function () {
    const pace = new RestartPace(poolPace(2));
    const delays = [0, 1_000, 2_000, 3_000, 4_000, 5_000].map((t) => pace.delayAfterExit(t));
    expect(delays).to.deep.equal([0, 0, 0, 0, 1_000, 1_000]);
  });

  it('forgets exits older than 10 s', function () {
    const pace = new RestartPace(poolPace(1));
    for (const t of [0, 1_000]) pace.delayAfterExit(t);
    expect(pace.delayAfterExit(2_000)).to.equal(1_000);
    expect(pace.delayAfterExit(11_500)).to.equal(0); // only the exits at 2 s and 11.5 s are within the window
  });

  it("restarts the launcher's child after 100 ms, doubling to 5 s while it keeps dying, and afresh after 10 s up", function () {
    const pace = new RestartPace(LAUNCHER_PACE);
    const delays: number[] = [];
    let t = 0;
    // Each child dies 50 ms after it started: the exits stay within 10 s of one another.
    for (let i = 0; i < 9; i++) {
      const delay = pace.delayAfterExit(t);
      delays.push(delay);
      t += delay + 50;
    }
    expect(delays).to.deep.equal([100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000, 5_000]);
    expect(pace.delayAfterExit(t + 10_001)).to.equal(100);
  });
});
