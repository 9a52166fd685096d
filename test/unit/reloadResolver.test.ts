import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { readConfig } from '../../common/config.ts';
import {
  readerOf,
  RELOAD_RULES,
  reloadedConfig,
  reloadNote,
  resolveReload,
  workersReplacedFor,
  type Reader,
} from '../../common/reloadResolver.ts';
import { SETTING_KEYS } from '../../common/settings.ts';

describe('the reload resolver', () => {
  let cwd: string;
  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'extqs-reload-'));
    for (const sub of ['public', 'controllers']) mkdirSync(join(cwd, 'www', sub), { recursive: true });
    writeFileSync(join(cwd, 'missing.html'), '<h1>gone</h1>\n');
  });
  after(() => rmSync(cwd, { recursive: true, force: true }));
  const read = (argv: string[]) => readConfig('check', argv, {}, cwd);
  const READERS: Reader[] = ['launcher', 'proxy', 'proxy-primary', 'host-pool'];

  it('applies the log settings and names the rest as needing a restart, values as the flags are written', () => {
    // From 4 workers on, the spare bounds derived from --workers (at most 3) stay as they are.
    const running = read(['--workers', '4']);
    const fresh = read(['--log-level', 'debug', '--log-max-size', '1m', '--pm', 'ondemand', '--workers', '4', '--port', '9000']);
    for (const reader of READERS) {
      const changes = resolveReload(reader, running, fresh);
      expect(changes.map(({ key, outcome }) => [key, outcome])).to.deep.equal([
        ['port', 'restart'],
        ['pm', 'restart'],
        ['logLevel', 'applied'],
        ['logMaxSize', 'applied'],
      ]);
      expect(reloadNote(changes)).to.equal(
        `applied --log-level "info" -> "debug", --log-max-size 0 -> 1048576; need a restart to apply: --port 8080 -> 9000, --pm "static" -> "ondemand"`,
      );
      const config = reloadedConfig(reader, running, fresh);
      expect([config.logLevel, config.port, config.workers]).to.deep.equal(['debug', 8080, running.workers]);
    }
  });

  it('names the flags an operator sets, the client limits and upstreams among them', () => {
    const running = read(['--upstream', 'unix:/run/a.sock']);
    const fresh = read([
      '--upstream',
      'unix:/run/a.sock',
      '--upstream',
      'http://10.0.0.2:9000',
      '--keep-alive-timeout',
      '2',
      '--status-allow',
      '10.0.0.0/8',
    ]);
    expect(reloadNote(resolveReload('proxy', running, fresh))).to.equal(
      'applied --status-allow "127.0.0.0/8,::1/128" -> "10.0.0.0/8", ' +
        '--upstream "unix:/run/a.sock" -> "unix:/run/a.sock,http://10.0.0.2:9000", --keep-alive-timeout 5 -> 2',
    );
  });

  it('says none for a setting not given, never undefined', () => {
    const running = read([]);
    const fresh = read(['--error-document', `404=${join(cwd, 'missing.html')}`, '--upstream', 'unix:/run/a.sock']);
    expect(reloadNote(resolveReload('launcher', fresh, running)))
      .to.contain('--error-document "404=')
      .and.to.contain('" -> none');
    expect(reloadNote(resolveReload('launcher', running, fresh))).to.contain('--upstream none -> "unix:/run/a.sock"');
    // The certificate's files as the parser keeps them: only whether there is one matters to the rule.
    const withTls = { ...running, tlsCert: '/etc/c.pem', tlsKey: '/etc/k.pem' };
    expect(reloadNote(resolveReload('proxy', running, withTls))).to.equal(
      'live settings unchanged; need a restart to apply: --tls-cert none -> "/etc/c.pem", --tls-key none -> "/etc/k.pem"',
    );
  });

  it('applies a renewed certificate but needs a restart to open or close the HTTPS listener, whatever the process count', () => {
    const running = read([]);
    const on = { ...running, tlsCert: '/etc/c.pem', tlsKey: '/etc/k.pem' };
    const renewed = { ...on, tlsCert: '/etc/c2.pem', tlsKey: '/etc/k2.pem', tlsRedirect: 'on' as const };
    for (const reader of READERS) {
      expect(resolveReload(reader, running, on).map((c) => c.outcome)).to.deep.equal(['restart', 'restart']);
      expect(resolveReload(reader, on, running).map((c) => c.outcome)).to.deep.equal(['restart', 'restart']);
      expect(resolveReload(reader, on, renewed).map((c) => c.outcome)).to.deep.equal(['applied', 'applied', 'applied']);
    }
  });

  it('has a rule for every setting, and knows which process read the settings', () => {
    const running = read([]);
    for (const key of SETTING_KEYS) expect(RELOAD_RULES[key].decide, key).to.be.a('function');
    expect(readerOf('start', running)).to.equal('launcher');
    expect(readerOf('proxy', { proxyWorkers: 1 })).to.equal('proxy');
    expect(readerOf('proxy', { proxyWorkers: 2 })).to.equal('proxy-primary');
    expect(readerOf('host', {})).to.equal('host-pool');
  });

  it('lets the host pool apply its own bounds, which a proxy cannot', () => {
    const running = read(['--workers', '4']);
    const fresh = read(['--workers', '6', '--listen-backlog', '100', '--worker-idle-timeout', '20']);
    for (const reader of READERS) {
      const outcome = reader === 'launcher' || reader === 'host-pool' ? 'applied' : 'restart';
      expect(resolveReload(reader, running, fresh).map(({ key, outcome }) => [key, outcome])).to.deep.equal([
        ['workers', outcome],
        ['workerIdleTimeout', outcome],
        ['listenBacklog', outcome],
      ]);
      expect(reloadedConfig(reader, running, fresh).workers).to.equal(outcome === 'applied' ? 6 : 4);
    }
  });

  it("applies the proxy workers' own settings by starting new workers where a primary has two or more, in one process itself", () => {
    const running = read(['--proxy-workers', '2', '--workers', '4']);
    const fresh = read([
      '--proxy-workers',
      '3',
      '--upstream-timeout',
      '45',
      '--max-header-fields',
      '5',
      '--port',
      '9000',
      '--workers',
      '4',
      '--pm',
      'ondemand',
    ]);
    const replacing: Reader[] = ['launcher', 'proxy-primary'];
    for (const reader of replacing) {
      const changes = resolveReload(reader, running, fresh);
      expect(changes.map(({ key, outcome }) => [key, outcome])).to.deep.equal([
        ['port', 'restart'],
        ['proxyWorkers', 'replaced'],
        ['pm', 'restart'],
        ['upstreamTimeout', 'replaced'],
        ['maxHeaderFields', 'replaced'],
      ]);
      expect(reloadNote(changes)).to.equal(
        'applied by starting new workers: --proxy-workers 2 -> 3, --upstream-timeout 30 -> 45, --max-header-fields 100 -> 5; ' +
          `need a restart to apply: --port 8080 -> 9000, --pm "static" -> "ondemand"`,
      );
      const config = reloadedConfig(reader, running, fresh);
      expect([config.proxyWorkers, config.upstreamTimeout, config.port]).to.deep.equal([3, 45, 8080]);
    }
    // One proxy process holds the port itself, and builds a new request path with them.
    const alone = read(['--proxy-workers', '1']);
    const freshAlone = read(['--proxy-workers', '1', '--upstream-timeout', '45']);
    for (const reader of ['launcher', 'proxy'] as const) {
      expect(reloadNote(resolveReload(reader, alone, freshAlone))).to.equal('applied --upstream-timeout 30 -> 45');
      expect(reloadedConfig(reader, alone, freshAlone).upstreamTimeout).to.equal(45);
    }
    // Going to one worker, or from one, changes who holds the port.
    expect(resolveReload('proxy-primary', running, read(['--proxy-workers', '1', '--workers', '4'])).map((c) => c.outcome)).to.deep.equal([
      'restart',
    ]);
    expect(resolveReload('launcher', alone, read(['--proxy-workers', '2'])).map((c) => c.outcome)).to.deep.equal(['restart']);
  });

  it('keeps a new https:// upstream for the restart that its new --mtls-* files need', () => {
    const running = read(['--upstream', 'unix:/run/a.sock']);
    const secure = { upstreams: [{ kind: 'tcp' as const, host: '10.0.0.5', port: 9443, tls: true as const }] };
    // The pair as the parser keeps it: only whether it changed matters to the rule.
    const pair = { mtlsCert: 'cert', mtlsKey: 'key', mtlsCa: 'ca' };
    const outcomes = (fresh: object, from: object = running) =>
      resolveReload('proxy', from as typeof running, { ...(from as typeof running), ...fresh }).map(({ key, outcome }) => [key, outcome]);
    expect(outcomes({ ...secure, ...pair })).to.deep.include(['upstreams', 'restart']);
    // With the pair it runs with already, the new upstream is the request path's like any other.
    expect(outcomes(secure, { ...running, ...pair })).to.deep.equal([['upstreams', 'applied']]);
    // A plain upstream does not wait for a new pair.
    expect(outcomes({ upstreams: [{ kind: 'unix', path: '/run/b.sock' }], ...pair })).to.deep.include(['upstreams', 'applied']);
  });

  it("applies the host workers' own limits by starting new host workers, from the launcher or the pool, and the pool's bounds live", () => {
    const running = read(['--workers', '4']);
    const fresh = read(['--workers', '4', '--max-requests', '100', '--post-max-size', '1m', '--listen-backlog', '100']);
    for (const reader of ['launcher', 'host-pool'] as const)
      expect(resolveReload(reader, running, fresh).map(({ key, outcome }) => [key, outcome])).to.deep.equal([
        ['listenBacklog', 'applied'],
        ['maxRequests', 'replaced'],
        ['postMaxSize', 'replaced'],
      ]);
    expect(workersReplacedFor('host-pool', running, fresh)).to.equal(true);
    expect(workersReplacedFor('host-pool', running, read(['--workers', '5', '--log-level', 'debug']))).to.equal(false);
  });

  it('tells a primary whether its workers must be replaced: not for a new count or a live setting alone', () => {
    const running = read(['--proxy-workers', '2']);
    expect(workersReplacedFor('proxy-primary', running, read(['--proxy-workers', '2', '--server-tokens', 'prod']))).to.equal(true);
    expect(workersReplacedFor('proxy-primary', running, read(['--proxy-workers', '3']))).to.equal(false);
    expect(workersReplacedFor('proxy-primary', running, read(['--proxy-workers', '2', '--log-level', 'debug', '--port', '9000']))).to.equal(
      false,
    );
  });

  it('says when nothing changed', () => {
    expect(reloadNote(resolveReload('launcher', read([]), read([])))).to.equal('live settings unchanged');
  });
});
