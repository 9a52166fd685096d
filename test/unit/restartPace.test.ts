import { expect } from 'chai';
import { RESTART_DELAY_MS, RestartPace } from '../../common/restartPace.ts';

describe('RestartPace', function () {
  it('replaces at once until more than twice the workers died within 10 s, then after a pause', function () {
    const pace = new RestartPace(2);
    const delays = [0, 1_000, 2_000, 3_000, 4_000].map((t) => pace.delayAfterExit(t));
    expect(delays).to.deep.equal([0, 0, 0, 0, RESTART_DELAY_MS]);
  });

  it('forgets exits older than 10 s', function () {
    const pace = new RestartPace(1);
    for (const t of [0, 1_000]) pace.delayAfterExit(t);
    expect(pace.delayAfterExit(2_000)).to.equal(RESTART_DELAY_MS);
    expect(pace.delayAfterExit(11_500)).to.equal(0); // only the exits at 2 s and 11.5 s are within the window
  });
});
