// /server-status as an operator meets it: in a real browser (Debian's Chromium driven by playwright-core),
// as ?auto and ?json for scripts, and refused to clients not on --status-allow.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/chromium.ts';
import { get } from '../helpers/http.ts';
import { total } from '../helpers/metrics.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

describe('/server-status', function () {
  let sandbox: Sandbox;
  let stack: Running;
  let browser: Browser | undefined;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Hello.ts'), `export default () => ({ hello: 'world' });\n`);
    // Only 127.0.0.1, so a client on another loopback address (127.0.0.2) stands for a remote one.
    stack = await startStack(sandbox, ['--workers', '1', '--status-allow', '127.0.0.1']);
    expect((await get(stack.url, '/External/Hello')).status).to.equal(200);
    expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
  });

  after(async function () {
    await browser?.close();
    await stack?.stop();
    sandbox?.remove();
  });

  it('shows a person the totals, the upstream and the host with its controllers', async function () {
    browser = await launchChromium();
    const page = await browser.newPage();
    const response = await page.goto(`${stack.url}/server-status`);
    expect(response?.status()).to.equal(200);
    expect(await page.locator('h1').innerText()).to.equal('extqs Server Status');
    const totals = await page.getByText(/^Total accesses: \d+/).innerText();
    expect(Number(/Total accesses: (\d+)/.exec(totals)![1])).to.be.at.least(2);
    const statuses = page.locator('table', { has: page.locator('caption', { hasText: 'Responses by status' }) });
    expect(await statuses.locator('tr', { hasText: '404' }).locator('td').allInnerTexts()).to.deep.equal(['404', '1']);
    const upstream = page
      .locator('table', { has: page.locator('caption', { hasText: 'Upstreams' }) })
      .locator('tr')
      .nth(1);
    expect((await upstream.locator('td').allInnerTexts()).slice(0, 2)).to.deep.equal([`unix:${await hostSocket()}`, 'up']);
    expect(await page.getByText(/workers$/).innerText()).to.match(/^Pool pid \d+, 1 workers$/);
    const hello = page.locator('table', { has: page.locator('caption', { hasText: 'Controllers' }) }).locator('tr', { hasText: 'Hello' });
    expect(await hello.locator('td').allInnerTexts()).to.deep.equal(['Hello', '1', '0', '0']);
  });

  it('reloads itself with ?refresh=N, each time with fresh figures', async function () {
    browser ??= await launchChromium();
    const page = await browser.newPage();
    await page.goto(`${stack.url}/server-status?refresh=1`);
    const accesses = async () => Number(/Total accesses: (\d+)/.exec(await page.getByText(/^Total accesses:/).innerText())![1]);
    const first = await accesses();
    await page.waitForEvent('load', { timeout: 5000 }); // the browser's own refresh
    expect(await accesses()).to.be.greaterThan(first);
  });

  it('gives ?auto and ?json for scripts', async function () {
    const auto = await get(stack.url, '/server-status?auto');
    expect(auto.status).to.equal(200);
    expect(auto.headers['content-type']).to.equal('text/plain; charset=utf-8');
    expect(auto.body).to.match(/^Total Accesses: \d+$/m);
    expect(auto.body).to.match(/^Status200: \d+$/m);
    expect(auto.body).to.match(/^Upstream: unix:\S+ up requests=\d+ fails=0$/m);
    const json = JSON.parse((await get(stack.url, '/server-status?json')).body);
    // Every response counted once, under its status (the browser's own favicon requests among the 404s).
    expect(json.statuses['404']).to.be.at.least(1);
    expect(Object.values(json.statuses as Record<string, number>).reduce((a, b) => a + b, 0)).to.equal(json.totalAccesses);
    expect(json.hosts[0].summary.controllers.Hello.requests).to.equal(1);
  });

  it('refuses a client not on --status-allow with 403 and an error.log line, and a bad refresh with 400', async function () {
    const denied = await get(stack.url, '/server-status', { localAddress: '127.0.0.2' });
    expect(denied.status).to.equal(403);
    expect(denied.body).not.to.contain('Total accesses');
    await eventually(
      () =>
        readLog(sandbox, 'error.log').find(
          (l) => l.includes('[client 127.0.0.2:') && l.includes('AH01630: client denied by server configuration: /server-status'),
        ),
      2000,
      'the denial line',
    );
    expect((await get(stack.url, '/server-status?refresh=0')).status).to.equal(400);
  });

  /** The host's socket as the host itself announced it in host.log (not as the page under test says). */
  async function hostSocket(): Promise<string> {
    const line = await eventually(
      () => readLog(sandbox, 'host.log').find((l) => /Host pool \d+ serving .* on unix:/.test(l)),
      3000,
      "the host's serving line",
    );
    return / on unix:(\S+) with /.exec(line)![1];
  }
});

describe('/server-status with --proxy-workers 2', function () {
  let sandbox: Sandbox;
  let stack: Running;
  /** Forwarded requests, and static misses (404), sent before any scrape. */
  const K = 12;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Hello.ts'), `export default () => ({ hello: 'world' });\n`);
    stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '2']);
    // A connection each: the primary hands them out in turn, so both workers answer some.
    for (let i = 0; i < K; i++) expect((await get(stack.url, '/External/Hello')).status).to.equal(200);
    for (let i = 0; i < K; i++) expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('sums every worker on each form, whichever worker takes the scrape, and agrees with /metrics', async function () {
    for (let scrape = 0; scrape < 6; scrape++) {
      const auto = await get(stack.url, '/server-status?auto');
      expect(auto.body).to.match(new RegExp(`^Upstream: unix:\\S+ up requests=${K} fails=0$`, 'm'));
      expect(auto.body).to.match(new RegExp(`^Status404: ${K}$`, 'm'));
      const accesses = Number(/^Total Accesses: (\d+)$/m.exec(auto.body)![1]);
      const statuses = [...auto.body.matchAll(/^Status\d{3}: (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0);
      expect(statuses, 'the statuses add up to the accesses').to.equal(accesses);
      // The next scrape counts this one, and only this one, more.
      const metrics = (await get(stack.url, '/metrics')).body;
      expect(total(metrics, 'extqs_http_requests_total'), 'Total Accesses and /metrics').to.equal(accesses + 1);
      expect(total(metrics, 'extqs_upstream_requests_total')).to.equal(K);
      expect(total(metrics, 'extqs_http_requests_total', { kind: 'static', status_class: '4xx' })).to.equal(K);
      const json = JSON.parse((await get(stack.url, '/server-status?json')).body);
      expect(json.upstreams[0]).to.include({ state: 'up', requests: K, fails: 0 });
      expect(json.statuses['404']).to.equal(K);
      expect(json.totalAccesses).to.equal(accesses + 2);
      const html = (await get(stack.url, '/server-status')).body;
      expect(html).to.match(new RegExp(`<td>unix:[^<]+</td><td>up</td><td>${K}</td><td>0</td>`));
      expect(html).to.contain(`Total accesses: ${accesses + 3} -`);
    }
    const workers = new Set(
      readLog(sandbox, 'error.log')
        .filter((l) => l.includes('AH00128'))
        .map((l) => /\[pid (\d+)\]/.exec(l)?.[1]),
    );
    expect(workers.size, 'static misses answered by both workers').to.equal(2);
  });
});
