// 100,000 requests for distinct controller names that have no file (npm run test:reliability): the
// names a client invents must not grow /metrics, /server-status or any process's memory. The baseline
// is the same stack after as many requests for one missing name, so what V8 keeps for the load itself
// is in both figures and only what each new name costs is in the difference.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { total } from '../helpers/metrics.ts';
import { descendants, makeSandbox, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const REQUESTS = 100_000;
const CONNECTIONS = 32;
const RSS_SLACK_MB = 30;
const METRICS_LIMIT_BYTES = 1024 * 1024;

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
}

/** Every process of the stack (launcher, proxy primary and workers, host pool and workers) and its RSS. */
function footprints(stack: Running): Map<number, number> {
  const pids = [stack.child.pid!, ...descendants(stack.child.pid!)];
  return new Map(pids.map((pid) => [pid, rssMb(pid)]));
}

async function flood(stack: Running, path: (n: number) => string): Promise<autocannon.Result> {
  let n = 0;
  const result = await autocannon({
    url: stack.url,
    connections: CONNECTIONS,
    amount: REQUESTS,
    timeout: 10,
    requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: path(n++) }) }],
  });
  expect([result.errors, result.timeouts, result.non2xx], 'errors, timeouts, non-2xx answers').to.deep.equal([0, 0, REQUESTS]);
  return result;
}

/** /metrics, /server-status and the host's rows, as a scraper reads them. */
async function scrape(stack: Running) {
  const [metrics, status] = await Promise.all([get(stack.url, '/metrics'), get(stack.url, '/server-status?json')]);
  expect([metrics.status, status.status]).to.deep.equal([200, 200]);
  return { metrics: metrics.body, status: status.body };
}

describe(`${REQUESTS} requests for distinct missing controller names`, function () {
  this.timeout(300_000);
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    stack = await startStack(sandbox, ['--workers', '2', '--proxy-workers', '2']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('keeps /metrics under 1 MB, counts them under (missing), and every process within 30 MB of its RSS after one name', async function () {
    await flood(stack, () => '/External/Missing');
    const warm = await scrape(stack);
    const baseline = footprints(stack);

    await flood(stack, (n) => `/External/Missing${n}x`);
    const after = await scrape(stack);
    const now = footprints(stack);

    process.stdout.write(
      `      /metrics ${warm.metrics.length} -> ${after.metrics.length} bytes; /server-status ${warm.status.length} -> ${after.status.length} bytes\n`,
    );
    for (const [pid, mb] of baseline) process.stdout.write(`      pid ${pid}: ${mb.toFixed(1)} -> ${now.get(pid)?.toFixed(1)} MB\n`);
    expect(after.metrics.length).to.be.below(METRICS_LIMIT_BYTES);
    expect(after.status.length).to.be.below(warm.status.length + 1024);
    expect(total(after.metrics, 'extqs_host_controller_requests_total', { controller: '(missing)' })).to.equal(2 * REQUESTS);
    expect(after.metrics).not.to.contain('controller="Missing0x"');
    expect([...now.keys()], 'the same processes, none restarted').to.have.members([...baseline.keys()]);
    for (const [pid, mb] of baseline) expect(now.get(pid), `RSS of pid ${pid} (MB)`).to.be.below(mb + RSS_SLACK_MB);
  });
});
