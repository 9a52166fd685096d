import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { readConfig } from '../../common/config.ts';
import { readerOf, RELOAD_RULES, reloadedConfig, reloadNote, resolveReload, type Reader } from '../../common/reloadResolver.ts';
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
    const running = read([]);
    const fresh = read(['--log-level', 'debug', '--log-max-size', '1m', '--workers', '3', '--port', '9000']);
    for (const reader of READERS) {
      const changes = resolveReload(reader, running, fresh);
      expect(changes.map(({ key, outcome }) => [key, outcome])).to.deep.equal([
        ['port', 'restart'],
        ['workers', 'restart'],
        ['logLevel', 'applied'],
        ['logMaxSize', 'applied'],
      ]);
      expect(reloadNote(changes)).to.equal(
        `applied --log-level "info" -> "debug", --log-max-size 0 -> 1048576; need a restart to apply: --port 8080 -> 9000, --workers ${running.workers} -> 3`,
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
      'live settings unchanged; need a restart to apply: --status-allow "127.0.0.0/8,::1/128" -> "10.0.0.0/8", ' +
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

  it('says when nothing changed', () => {
    expect(reloadNote(resolveReload('launcher', read([]), read([])))).to.equal('live settings unchanged');
  });
});
