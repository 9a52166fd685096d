// The parts of console capture (host/consoleCapture.ts) that need no process: the flood bucket, the
// controller found on a stack.
import { expect } from 'chai';
import { controllerOnStack, TokenBucket } from '../../host/consoleCapture.ts';

describe('console capture', () => {
  describe('TokenBucket', () => {
    it('lets the burst through at once, then refills at its rate, never past the burst', () => {
      let now = 0;
      const bucket = new TokenBucket(100, 200, () => now);
      let passed = 0;
      for (let i = 0; i < 1000; i += 1) if (bucket.take()) passed += 1;
      expect(passed).to.equal(200);
      now += 50; // 5 tokens
      passed = 0;
      for (let i = 0; i < 1000; i += 1) if (bucket.take()) passed += 1;
      expect(passed).to.equal(5);
      now += 60_000;
      passed = 0;
      for (let i = 0; i < 1000; i += 1) if (bucket.take()) passed += 1;
      expect(passed).to.equal(200);
    });
  });

  describe('controllerOnStack', () => {
    it('names the first controller file on the stack, or nothing', () => {
      const stack = 'Error\n    at log (file:///opt/extqs/build/host/consoleCapture.js:1:1)\n    at /srv/www/controllers/Latest.ts:3:9\n';
      expect(controllerOnStack(stack, '/srv/www/controllers')).to.equal('Latest');
      expect(controllerOnStack('Error\n    at /srv/www/controllers/node_modules/x.js:1:1', '/srv/www/controllers')).to.equal(undefined);
      expect(controllerOnStack('Error\n    at foo (node:internal/x:1:1)', '/srv/www/controllers')).to.equal(undefined);
    });
  });
});
