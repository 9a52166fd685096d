// Reloading must not grow memory. A version that stayed reachable would keep its ~200 KB: 200 MB per 1,000
// reloads. The JS heap is measured exactly; RSS also sees native memory (compiled code, esbuild's buffers)
// but jumps once when the allocator commits a page, so each of three windows is measured and the median
// one is bounded: a leak grows in every window. The fixture drives the host's own registry and loader in a
// process of its own with --expose-gc, so the measurement sees only reloads, after full collections.
import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import { ROOT } from '../helpers/stack.ts';

describe('reloading a controller 1,000 times', function () {
  this.timeout(120_000);

  it('grows the JS heap by less than 5 MB and RSS by less than 10 MB a window, every version installed', function () {
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
    expect(result.heapGrowth, 'JS heap growth over 3,000 reloads').to.be.below(5 * 1024 * 1024);
    const [, median] = [...result.rssGrowth].sort((a, b) => a - b);
    expect(median, `RSS growth per 1,000 reloads: ${result.rssGrowth.join(', ')} bytes`).to.be.below(10 * 1024 * 1024);
  });
});
