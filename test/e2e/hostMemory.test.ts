// Reloading must not grow memory: 1,000 reloads of a controller holding ~200 KB add less than 10 MB RSS.
// The fixture drives the host's own registry and loader in a process of its own with --expose-gc, so
// the measurement sees only reloads, after full collections.
import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import { ROOT } from '../helpers/stack.ts';

describe('reloading a controller 1,000 times', function () {
  this.timeout(120_000);

  it('grows RSS by less than 10 MB, every version installed', function () {
    const out = execFileSync(
      process.execPath,
      ['--expose-gc', '--min-semi-space-size=16', '--max-semi-space-size=16', '--import', 'tsx', 'test/fixtures/reloadMemory.ts', '1000'],
      {
        cwd: ROOT,
        encoding: 'utf8',
      },
    );
    const result = JSON.parse(out.trim().split('\n').at(-1)!);
    expect(result.reloads).to.equal(1000);
    expect(result.failures).to.equal(0);
    expect(result.growth).to.be.below(10 * 1024 * 1024);
  });
});
