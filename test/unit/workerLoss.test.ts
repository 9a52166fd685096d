import { expect } from 'chai';
import { JUST_SENT_MS, sendAgainAfterLoss, type LostRequest } from '../../common/workerLoss.ts';

describe("a request's fate when its worker is lost", function () {
  const request = (over: Partial<LostRequest> = {}): LostRequest => ({
    requestId: 'r1',
    resendable: true,
    resent: false,
    sentMs: 5,
    ...over,
  });

  it('sends a neighbour of a death with a known cause again, never the request that caused it', function () {
    expect(sendAgainAfterLoss(request(), { died: true, culprit: 'r2' })).to.equal(true);
    expect(sendAgainAfterLoss(request(), { died: true, culprit: 'r1' })).to.equal(false);
  });

  it('sends every request of a death with no known cause again, whenever it was sent', function () {
    expect(sendAgainAfterLoss(request({ sentMs: 60_000 }), { died: true, culprit: undefined })).to.equal(true);
  });

  it('sends a request again once only', function () {
    expect(sendAgainAfterLoss(request({ resent: true }), { died: true, culprit: undefined })).to.equal(false);
    expect(sendAgainAfterLoss(request({ resent: true }), { died: false })).to.equal(false);
  });

  it('never sends again a request that consumed something (a body, a head already relayed)', function () {
    expect(sendAgainAfterLoss(request({ resendable: false }), { died: true, culprit: 'r2' })).to.equal(false);
    expect(sendAgainAfterLoss(request({ resendable: false }), { died: false })).to.equal(false);
  });

  it('sends again what a retiring worker closed only when it was just sent', function () {
    expect(sendAgainAfterLoss(request({ sentMs: JUST_SENT_MS - 1 }), { died: false })).to.equal(true);
    expect(sendAgainAfterLoss(request({ sentMs: JUST_SENT_MS }), { died: false })).to.equal(false);
  });

  it('fails a request its live worker cut itself (no fate within the wait)', function () {
    expect(sendAgainAfterLoss(request(), undefined)).to.equal(false);
  });
});
