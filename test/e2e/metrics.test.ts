// /metrics as a monitoring system meets it: checked by Debian's promtool, scraped by a real Prometheus
// (a config written here, on loopback) whose HTTP API must show the counter the test drove, summed over
// proxy workers, and refused to clients not on --status-allow.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { FORWARDERS } from '../../common/settings.ts';
import { get } from '../helpers/http.ts';
import { parseMetrics, total } from '../helpers/metrics.ts';
import { queried, startPrometheus, type Prometheus } from '../helpers/prometheus.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const FAVICON_404 = { kind: 'static', method: 'GET', status_class: '4xx' };

describe('/metrics', function () {
  describe('one proxy process', function () {
    let sandbox: Sandbox;
    let stack: Running;
    let prometheus: Prometheus | undefined;

    before(async function () {
      sandbox = makeSandbox();
      writeFileSync(join(sandbox.controllers, 'Hello.ts'), `export default () => ({ hello: 'world' });\n`);
      // Only 127.0.0.1, so a client on another loopback address (127.0.0.2) stands for a remote one.
      stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1', '--status-allow', '127.0.0.1']);
      for (let i = 0; i < 3; i++) expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
      for (let i = 0; i < 2; i++) expect((await get(stack.url, '/External/Hello')).status).to.equal(200);
      expect((await get(stack.url, '/External/Missing')).status).to.equal(500);
      expect((await get(stack.url, '/favicon.ico', { method: 'DELETE' })).status).to.equal(405);
    });

    after(async function () {
      await prometheus?.stop();
      await stack?.stop();
      sandbox?.remove();
    });

    it('answers the text format, which promtool accepts, with what was driven', async function () {
      const res = await get(stack.url, '/metrics');
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.equal('text/plain; version=0.0.4; charset=utf-8');
      expect(res.headers['cache-control']).to.equal('no-store');
      const check = spawnSync('promtool', ['check', 'metrics'], { input: res.body, encoding: 'utf8' });
      expect(check.error, 'promtool (Debian package prometheus) must be installed').to.equal(undefined);
      expect(check.status, `promtool check metrics: ${check.stdout}${check.stderr}`).to.equal(0);

      const body = res.body;
      expect(total(body, 'extqs_http_requests_total', FAVICON_404)).to.equal(3);
      expect(total(body, 'extqs_http_requests_total', { kind: 'controller', status_class: '2xx' })).to.equal(2);
      expect(total(body, 'extqs_http_requests_total', { kind: 'controller', status_class: '5xx' })).to.equal(1);
      expect(total(body, 'extqs_http_requests_total', { kind: 'static', method: 'DELETE', status_class: '4xx' })).to.equal(1);
      expect(total(body, 'extqs_http_request_duration_seconds_count', { kind: 'static' })).to.equal(4);
      expect(total(body, 'extqs_http_request_duration_seconds_bucket', { kind: 'static', le: '+Inf' })).to.equal(4);
      // The access log's %b of the four static answers (Apache's 404 and 405 pages).
      const staticBytes = readLog(sandbox, 'access.log')
        .filter((l) => l.includes(' /favicon.ico HTTP/1.1"'))
        .map((l) => Number(/" 40[45] (\d+) /.exec(l)![1]));
      expect(staticBytes).to.have.length(4);
      expect(total(body, 'extqs_http_response_body_bytes_total', { kind: 'static' })).to.equal(staticBytes.reduce((a, b) => a + b, 0));
      expect(total(body, 'extqs_http_requests_in_flight')).to.equal(1); // this scrape
      expect(total(body, 'extqs_proxy_workers')).to.equal(1);
      expect(total(body, 'extqs_upstream_up')).to.equal(1);
      expect(total(body, 'extqs_upstream_requests_total')).to.equal(3);
      expect(total(body, 'extqs_upstream_connect_failures_total')).to.equal(0);
      expect(total(body, 'extqs_host_up')).to.equal(1);
      expect(total(body, 'extqs_host_workers')).to.equal(1);
      expect(total(body, 'extqs_host_requests_total')).to.equal(3);
      expect(total(body, 'extqs_host_worker_restarts_total')).to.equal(0);
      expect(total(body, 'extqs_host_controller_requests_total', { controller: 'Hello' })).to.equal(2);
      expect(total(body, 'extqs_host_controller_load_failures_total', { controller: '(missing)' })).to.equal(1);
      expect(total(body, 'extqs_host_controller_errors_total', { controller: 'Hello' })).to.equal(0);
    });

    it('counts a controller reload and a host worker replaced after it died', async function () {
      const before = (await get(stack.url, '/metrics')).body;
      writeFileSync(join(sandbox.controllers, 'Hello.ts'), `export default () => ({ hello: 'again' });\n`);
      await eventually(
        async () => ((await get(stack.url, '/External/Hello')).body.includes('again') ? true : undefined),
        5000,
        'the new version',
      );
      const reloads = await eventually(
        async () =>
          total((await get(stack.url, '/metrics')).body, 'extqs_host_controller_reloads_total', { controller: 'Hello' }) || undefined,
        3000,
        'the reload counted',
      );
      expect(reloads - (total(before, 'extqs_host_controller_reloads_total', { controller: 'Hello' }) ?? 0)).to.equal(1);

      const status = JSON.parse((await get(stack.url, '/server-status?json')).body);
      expect(status.hosts[0].summary.restarts).to.deep.equal({ exited: 0, recycled: 0 });
      const workerPid = await hostWorkerPid(stack);
      process.kill(workerPid, 'SIGKILL');
      await eventually(
        async () =>
          total((await get(stack.url, '/metrics')).body, 'extqs_host_worker_restarts_total', { reason: 'exited' }) === 1 ? true : undefined,
        5000,
        'the restart counted',
      );
    });

    it('refuses a client not on --status-allow, as /server-status does, and methods other than GET and HEAD', async function () {
      const denied = await get(stack.url, '/metrics', { localAddress: '127.0.0.2' });
      expect(denied.status).to.equal(403);
      expect(denied.body).not.to.contain('extqs_');
      await eventually(
        () =>
          readLog(sandbox, 'error.log').find(
            (l) =>
              l.includes('[authz_core:error]') &&
              l.includes('[client 127.0.0.2:') &&
              l.includes('AH01630: client denied by server configuration: /metrics'),
          ),
        2000,
        'the denial line',
      );
      const posted = await get(stack.url, '/metrics', { method: 'POST' });
      expect(posted.status).to.equal(405);
      expect(posted.headers.allow).to.equal('GET, HEAD');
      const head = await get(stack.url, '/metrics', { method: 'HEAD' });
      expect(head.status).to.equal(200);
      expect(head.body).to.equal('');
    });

    it('is scraped by a real Prometheus, whose API shows the counter the test drove', async function () {
      this.timeout(60_000);
      prometheus = await startPrometheus(sandbox, new URL(stack.url).host);
      const query = `extqs_http_requests_total{job="extqs",kind="static",method="GET",status_class="4xx"}`;
      expect(await eventually(() => queried(prometheus!, query), 15_000, `${query} in Prometheus`)).to.equal(3);
      // Two more, and the next scrapes see them.
      for (let i = 0; i < 2; i++) expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
      await eventually(async () => ((await queried(prometheus!, query)) === 5 ? true : undefined), 10_000, 'the new count in Prometheus');
      expect(await queried(prometheus, 'up{job="extqs"}')).to.equal(1);
    });
  });

  describe('on --metrics-port, with --proxy-workers 2 and no loopback on --status-allow', function () {
    let sandbox: Sandbox;
    let stack: Running;
    let metricsUrl: string;
    let prometheus: Prometheus | undefined;

    before(async function () {
      sandbox = makeSandbox();
      // Loopback is not on the list: every client here stands for a cluster's scraper on another pod.
      stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '2', '--metrics-port', '0', '--status-allow', '10.0.0.1']);
      const notice = await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.includes('serving /metrics alone on ')),
        5000,
        'the metrics port line',
      );
      metricsUrl = /serving \/metrics alone on (http:\/\/\S+)\/metrics/.exec(notice)![1];
    });

    after(async function () {
      await prometheus?.stop();
      await stack?.stop();
      sandbox?.remove();
    });

    it('answers /metrics to any client there, where the public port refuses it; nothing else is served there', async function () {
      for (let i = 0; i < 3; i++) expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
      expect((await get(stack.url, '/metrics')).status).to.equal(403);
      for (const localAddress of ['127.0.0.1', '127.0.0.2']) {
        const res = await get(metricsUrl, '/metrics', { localAddress });
        expect(res.status).to.equal(200);
        expect(res.headers['content-type']).to.match(/^text\/plain; version=0\.0\.4/);
        expect(total(res.body, 'extqs_proxy_workers')).to.equal(2);
        expect(total(res.body, 'extqs_http_requests_total', FAVICON_404)).to.equal(3);
      }
      for (const path of ['/server-status', '/server-status?json', '/favicon.ico', '/External/Hello', '/-/ready']) {
        expect((await get(metricsUrl, path)).status, path).to.equal(404);
      }
      expect((await get(metricsUrl, '/metrics', { method: 'POST' })).status).to.equal(405);
    });

    it('is scraped by a real Prometheus there', async function () {
      this.timeout(60_000);
      prometheus = await startPrometheus(sandbox, new URL(metricsUrl).host);
      expect(await eventually(() => queried(prometheus!, 'extqs_proxy_workers{job="extqs"}'), 15_000, 'a scrape in Prometheus')).to.equal(
        2,
      );
      expect(await queried(prometheus, 'up{job="extqs"}')).to.equal(1);
    });
  });

  describe('with --proxy-workers 2', function () {
    let sandbox: Sandbox;
    let stack: Running;

    before(async function () {
      sandbox = makeSandbox();
      stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '2']);
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    it('sums every worker: each request counted once, whichever worker answered it or the scrape', async function () {
      // A connection each: the primary hands them out in turn, so both workers answer some.
      const requests = 20;
      for (let i = 0; i < requests; i++) expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
      const answeredBy = new Set(
        readLog(sandbox, 'error.log')
          .filter((l) => l.includes('AH00128'))
          .map((l) => /\[pid (\d+)\]/.exec(l)?.[1]),
      );
      expect(answeredBy.size, 'requests answered by both workers').to.equal(2);
      for (let scrape = 0; scrape < 4; scrape++) {
        const res = await get(stack.url, '/metrics');
        expect(res.status).to.equal(200);
        expect(total(res.body, 'extqs_proxy_workers')).to.equal(2);
        expect(total(res.body, 'extqs_http_requests_total', FAVICON_404)).to.equal(requests);
        expect(total(res.body, 'extqs_http_request_duration_seconds_count', { kind: 'static' })).to.equal(requests);
        // Asked once, whatever the workers: not doubled by the sum.
        expect(total(res.body, 'extqs_host_up')).to.equal(1);
        expect(total(res.body, 'extqs_upstream_up')).to.equal(1);
        const check = spawnSync('promtool', ['check', 'metrics'], { input: res.body, encoding: 'utf8' });
        expect(check.status, `promtool check metrics: ${check.stdout}${check.stderr}`).to.equal(0);
      }
    });

    it('keeps what a killed worker had counted: no counter goes down, on /metrics or /server-status', async function () {
      for (let i = 0; i < 6; i++) expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
      const [metrics, status] = await Promise.all([get(stack.url, '/metrics'), get(stack.url, '/server-status?json')]);
      const counted = total(metrics.body, 'extqs_http_requests_total', FAVICON_404)!;
      const statusCount = (JSON.parse(status.body) as { statuses: Record<string, number> }).statuses['404'];
      expect(counted).to.be.at.least(6);
      const victim = Number(/\[pid (\d+)\]/.exec(readLog(sandbox, 'error.log').findLast((l) => l.includes('AH00128'))!)![1]);
      process.kill(victim, 'SIGKILL');
      await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes(`proxy worker ${victim} exited`)), 5000, 'the exit line');
      for (let scrape = 0; scrape < 4; scrape++) {
        const after = await get(stack.url, '/metrics');
        expect(total(after.body, 'extqs_http_requests_total', FAVICON_404)).to.equal(counted);
        expect(total(after.body, 'extqs_http_request_duration_seconds_count', { kind: 'static' })).to.equal(counted);
        const statuses = (JSON.parse((await get(stack.url, '/server-status?json')).body) as { statuses: Record<string, number> }).statuses;
        expect(statuses['404']).to.equal(statusCount);
      }
    });
  });
});

for (const forwarder of FORWARDERS) {
  describe(`/metrics across restarts (--forwarder ${forwarder})`, function () {
    let sandbox: Sandbox;
    let stack: Running | undefined;

    before(function () {
      sandbox = makeSandbox();
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    /** The launcher's upstream labels on /metrics and the upstream /server-status names, after one forwarded request. */
    async function oneStart(): Promise<{ labels: string[]; socket: string }> {
      stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1', '--forwarder', forwarder]);
      expect((await get(stack.url, '/External/Missing')).status).to.equal(500);
      const body = (await get(stack.url, '/metrics')).body;
      const labels = parseMetrics(body)
        .filter((s) => s.name.startsWith('extqs_upstream_') || s.name.startsWith('extqs_host_'))
        .map((s) => s.labels.upstream);
      const status = JSON.parse((await get(stack.url, '/server-status?json')).body) as { upstreams: { name: string }[] };
      expect(await stack.stop()).to.equal(0);
      stack = undefined;
      return { labels: [...new Set(labels)], socket: status.upstreams[0].name };
    }

    it("labels the launcher's own host `local` at every start, where its socket's directory changes", async function () {
      const first = await oneStart();
      const second = await oneStart();
      expect(first.labels).to.deep.equal(['local']);
      expect(second.labels).to.deep.equal(['local']);
      // The status page still names the socket, which is new at each start.
      expect(first.socket).to.match(/^unix:\/.*\/host\.sock$/);
      expect(second.socket).to.match(/^unix:\/.*\/host\.sock$/);
      expect(second.socket).not.to.equal(first.socket);
    });
  });
}

/** The pid of the stack's one host worker, from its pool's /status?full as the proxy's /server-status cannot show it. */
async function hostWorkerPid(stack: Running): Promise<number> {
  const status = JSON.parse((await get(stack.url, '/server-status?json')).body);
  const socketPath = (status.upstreams[0].name as string).replace(/^unix:/, '');
  const full = JSON.parse((await get('http://host', '/status?full', { socketPath })).body);
  return full.processes[0].pid as number;
}
