import { expect } from 'chai';
import { formatUptime, renderAuto, renderHtml, renderJson, type StatusReport } from '../../proxy/observe/statusPage.ts';

const report = (overrides: Partial<StatusReport> = {}): StatusReport => ({
  serverVersion: 'extqs/0.1.0 (Node.js v20.20.2)',
  startedAt: new Date('2026-11-22T10:00:00Z'),
  now: new Date('2026-11-22T10:01:40Z'), // 100 s later
  requests: 50,
  bytes: 51_200,
  inFlight: 1,
  connections: 3,
  statuses: { 200: 40, 404: 10 },
  upstreams: [
    { name: 'unix:/run/a.sock', label: 'local', state: 'up', requests: 30, fails: 0, retryInSeconds: 0 },
    { name: 'http://10.0.0.6:9000', label: 'http://10.0.0.6:9000', state: 'down', requests: 20, fails: 2, retryInSeconds: 7 },
  ],
  hosts: [
    {
      upstream: 'unix:/run/a.sock',
      summary: {
        pid: 41,
        workers: 2,
        states: { idle: 1, busy: 1 },
        acceptedRequests: 30,
        controllers: { Latest: { requests: 30, errors: 1, loadFailures: 0 } },
      },
    },
    { upstream: 'http://10.0.0.6:9000', error: 'ECONNREFUSED' },
  ],
  ...overrides,
});

describe('the server-status page', () => {
  it('spells uptime as Apache does', () => {
    expect(formatUptime(0)).to.equal('0 seconds');
    expect(formatUptime(1)).to.equal('1 second');
    expect(formatUptime(93_784)).to.equal('1 day 2 hours 3 minutes 4 seconds');
    expect(formatUptime(7_200)).to.equal('2 hours');
  });

  it('gives ?auto in mod_status key: value lines, with the rates over the uptime', () => {
    const lines = renderAuto(report()).trimEnd().split('\n');
    expect(lines).to.include.members([
      'ServerUptimeSeconds: 100',
      'Uptime: 100',
      'Total Accesses: 50',
      'Total kBytes: 50',
      'ReqPerSec: 0.5',
      'BytesPerSec: 512',
      'BytesPerReq: 1024',
      'BusyWorkers: 1',
      'ConnsTotal: 3',
      'Status200: 40',
      'Status404: 10',
      'Upstream: unix:/run/a.sock up requests=30 fails=0',
      'Upstream: http://10.0.0.6:9000 down requests=20 fails=2',
      'HostWorkers: unix:/run/a.sock 2 accepted=30',
      'HostWorkers: http://10.0.0.6:9000 unknown',
    ]);
    for (const line of lines) expect(line).to.match(/^[A-Za-z0-9 ]+: \S/);
  });

  it('gives ?json with the same figures', () => {
    const json = JSON.parse(renderJson(report()));
    expect(json).to.deep.include({
      uptimeSeconds: 100,
      totalAccesses: 50,
      totalBytes: 51_200,
      reqPerSec: 0.5,
      requestsInFlight: 1,
      connections: 3,
    });
    expect(json.upstreams[1]).to.deep.equal({ name: 'http://10.0.0.6:9000', state: 'down', requests: 20, fails: 2, retryInSeconds: 7 });
    expect(json.hosts[1]).to.deep.equal({ upstream: 'http://10.0.0.6:9000', error: 'ECONNREFUSED' });
  });

  it('refreshes the HTML page only when asked', () => {
    expect(renderHtml(report(), 5)).to.contain('<meta http-equiv="refresh" content="5">');
    expect(renderHtml(report(), undefined)).not.to.contain('http-equiv="refresh"');
  });

  it('shows the totals, each upstream, each host and its controllers', () => {
    const html = renderHtml(report(), undefined);
    expect(html).to.contain('<dt>Total accesses: 50 - Total Traffic: 50.0 kB</dt>');
    expect(html).to.contain('<tr><td>http://10.0.0.6:9000</td><td>down</td><td>20</td><td>2</td><td>7 s</td></tr>');
    expect(html).to.contain('<tr><td>Latest</td><td>30</td><td>1</td><td>0</td></tr>');
    expect(html).to.contain('Not answering: ECONNREFUSED');
  });

  it('escapes what it did not write itself', () => {
    const html = renderHtml(
      report({
        hosts: [
          {
            upstream: 'x',
            summary: {
              pid: 1,
              workers: 1,
              states: {},
              acceptedRequests: 0,
              controllers: { '<script>': { requests: 1, errors: 0, loadFailures: 0 } },
            },
          },
        ],
      }),
      undefined,
    );
    expect(html).not.to.contain('<script>');
    expect(html).to.contain('&lt;script&gt;');
  });
});
