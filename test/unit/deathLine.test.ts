import { expect } from 'chai';
import { deathLine, type Death } from '../../host/pool/deathLine.ts';

describe("a worker's death line", function () {
  const base: Death = { pid: 7, how: 'signal SIGKILL', delay: 0, cause: undefined, relayed: [], blocked: [] };
  const killedBy = (running?: NonNullable<Death['cause']>['running']): Death['cause'] => ({
    requestId: 'k',
    controller: 'Killer',
    cause: 'process.kill(process.pid, "SIGKILL") called by controller Killer',
    ...(running && { running }),
  });

  describe('when the worker listed what it ran before it went (a known cause)', function () {
    it("names each request a proxy sent it directly, and each one's fate; not the culprit, not one the primary relayed", function () {
      const line = deathLine({
        ...base,
        cause: killedBy([
          { requestId: 'k', what: 'GET /External/Killer', resendable: true },
          { requestId: 'g', what: 'GET /External/N?n=1', resendable: true },
          { requestId: 'p', what: 'POST /External/Save', resendable: false },
          { requestId: 'r', what: 'GET /External/N?n=2', resendable: true },
        ]),
        relayed: [{ label: 'GET /External/N?n=2', requestId: 'r', resendable: true }],
      });
      expect(line).to.equal(
        'Worker 7 exited with signal SIGKILL; starting a new one. Cause: process.kill(process.pid, "SIGKILL") called by controller Killer, ' +
          'in request k, which is not sent again. It was relaying GET /External/N?n=2 (req r, sent again); ' +
          'it ran from a proxy GET /External/N?n=1 (req g, sent again by its proxy), POST /External/Save (req p, failed)',
      );
    });

    it('says it ran nothing else when the culprit was all', function () {
      const line = deathLine({ ...base, cause: killedBy([{ requestId: 'k', what: 'GET /External/Killer', resendable: true }]) });
      expect(line).to.match(/It was relaying nothing; it ran nothing else from a proxy$/);
    });
  });

  describe('when it could not say (a kill from outside, the kernel)', function () {
    it("says each proxy's GETs and HEADs without a body go again once, and names what the primary relayed", function () {
      const line = deathLine({ ...base, relayed: [{ label: 'POST /External/Save', requestId: 'p', resendable: false }] });
      expect(line).to.equal(
        'Worker 7 exited with signal SIGKILL; starting a new one. Cause: no known cause: a kill from outside, or the kernel out of memory. ' +
          'It was relaying POST /External/Save (req p, failed); ' +
          'a proxy sends each other GET or HEAD without a body that it had sent there to another worker once',
      );
    });
  });
});
