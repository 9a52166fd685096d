// The prober's endpoints (docs/operations.md, "Status pages in detail"): /-/healthy while the proxy answers, /-/ready while a host has a
// worker able to take a request; for any client, and no access line unless the probe failed.
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startProxy, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

describe('health probes', function () {
  let sandbox: Sandbox;
  let running: Running | undefined;

  beforeEach(() => (sandbox = makeSandbox()));
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    sandbox.remove();
  });

  it('answers both with 200 under extqs start, to a client outside --status-allow, and logs neither', async function () {
    running = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1', '--status-allow', '10.9.9.9']);
    const live = await get(running.url, '/-/healthy');
    expect([live.status, live.body]).to.deep.equal([200, 'alive\n']);
    const ready = await get(running.url, '/-/ready');
    expect([ready.status, ready.body]).to.deep.equal([200, 'ready\n']);
    // The marker: its access line is written after any line the probes would have written.
    await get(running.url, '/favicon.ico');
    await eventually(() => readLog(sandbox, 'access.log').find((l) => l.includes('/favicon.ico')), 3000, 'the marker line');
    expect(readLog(sandbox, 'access.log').filter((l) => l.includes('/-/'))).to.deep.equal([]);
  });

  it('answers /-/ready 503 with an error line and an access line when no host can take a request; /-/healthy stays 200', async function () {
    running = await startProxy(sandbox, ['--upstream', `unix:${join(sandbox.dir, 'nobody.sock')}`, '--proxy-workers', '1']);
    expect((await get(running.url, '/-/healthy')).status).to.equal(200);
    expect((await get(running.url, '/-/ready')).status).to.equal(503);
    const line = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes('not ready')), 3000, 'the error line');
    expect(line).to.match(/\[proxy:error\] .*not ready: no host has a worker able to take a request \(unix:.*nobody\.sock: ENOENT\)/);
    await eventually(() => readLog(sandbox, 'access.log').find((l) => l.includes('"GET /-/ready HTTP/1.1" 503')), 3000, 'its access line');
  });
});
