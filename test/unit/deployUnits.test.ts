// The systemd units in deploy/ are what an operator copies: systemd must accept them, they must run the
// built command, and every flag they pass must be one their command takes today.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { COMMANDS, type Command } from '../../common/commands.ts';
import { readConfig } from '../../common/config.ts';
import { STOP_MARGIN_S } from '../../common/shutdown.ts';
import { ROOT } from '../helpers/stack.ts';

const UNITS = join(ROOT, 'deploy/systemd');

/** ExecStart's command and flags (the words after `bin/extqs.js`), with `\` continuations joined. */
function commandOf(unit: string): { command: Command; flags: string[] } {
  const execStart = /^ExecStart=((?:.*\\\n)*.*)/m.exec(unit)![1].replace(/\\\n/g, ' ');
  const words = execStart.split(/\s+/).filter(Boolean);
  expect(words.slice(0, 2), 'the unit runs the built command').to.deep.equal(['/usr/bin/node', 'bin/extqs.js']);
  expect(COMMANDS).to.include(words[2]);
  return { command: words[2] as Command, flags: words.slice(3) };
}

/** The configuration the unit's flags give, its --www and --logs replaced by a scratch tree (its own paths do not exist here). */
function configOf(file: string) {
  const dir = mkdtempSync(join(tmpdir(), 'extqs-unit-'));
  try {
    for (const sub of ['www/public', 'www/controllers', 'logs']) mkdirSync(join(dir, sub), { recursive: true });
    const { command, flags } = commandOf(readFileSync(join(UNITS, file), 'utf8'));
    const scratch = flags.map((w, i, all) => (all[i - 1] === '--www' ? join(dir, 'www') : all[i - 1] === '--logs' ? join(dir, 'logs') : w));
    return readConfig(command, scratch, {}, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the systemd units in deploy/systemd', () => {
  const files = readdirSync(UNITS).filter((f) => f.endsWith('.service'));

  it('are there for one machine, a host machine and a proxy machine', () => {
    expect(files.sort()).to.deep.equal(['extqs-host.service', 'extqs-proxy.service', 'extqs.service']);
  });

  for (const file of files) {
    it(`${file}: systemd-analyze verify accepts it`, () => {
      const run = spawnSync('systemd-analyze', ['verify', '--man=no', join(UNITS, file)], { encoding: 'utf8' });
      expect(run.error, 'systemd-analyze (Debian package systemd) must be installed').to.equal(undefined);
      expect(run.stderr.trim()).to.equal('');
      expect(run.status).to.equal(0);
    });

    it(`${file}: is Type=notify, taking the READY=1 of the systemd-notify helper extqs runs`, () => {
      const unit = readFileSync(join(UNITS, file), 'utf8');
      expect(unit).to.match(/^Type=notify$/m);
      expect(unit).to.match(/^NotifyAccess=all$/m);
    });

    it(`${file}: passes only flags the process accepts, with valid values`, () => {
      expect(commandOf(readFileSync(join(UNITS, file), 'utf8')).flags.length).to.be.greaterThan(2);
      expect(() => configOf(file)).not.to.throw();
    });

    it(`${file}: gives a stop the time the process may take before systemd kills it`, () => {
      const unit = readFileSync(join(UNITS, file), 'utf8');
      const { shutdownTimeout } = configOf(file);
      const worstCase =
        file === 'extqs.service'
          ? 2 * shutdownTimeout + STOP_MARGIN_S.proxy + STOP_MARGIN_S.host
          : shutdownTimeout + STOP_MARGIN_S[file.includes('host') ? 'host' : 'proxy'];
      expect(Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1])).to.be.at.least(worstCase);
    });
  }
});

describe("docs/operations.md's logrotate snippet", () => {
  const operations = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
  const snippet = /```\n([^`]*postrotate[^`]*)```/.exec(operations)?.[1] ?? '';
  const unit = readFileSync(join(UNITS, 'extqs.service'), 'utf8');
  const { flags } = commandOf(unit);
  const logs = flags[flags.indexOf('--logs') + 1];

  it("rotates the three logs in extqs.service's --logs, and names no other path", () => {
    expect(snippet, 'the snippet').to.include('postrotate');
    const files = snippet.split('{', 1)[0].trim().split(/\s+/);
    expect(files).to.deep.equal(['access.log', 'error.log', 'host.log'].map((file) => join(logs, file)));
    // A pid file or a log directory of its own would be a path the unit neither writes nor may write.
    const paths = snippet.match(/(?<![\w.])\/[\w./-]+/g) ?? [];
    expect(paths.filter((path) => !files.includes(path))).to.deep.equal([]);
  });

  it('signals the launcher through a unit in deploy/systemd that has a reload', () => {
    const reloaded = /^\s*systemctl reload (\S+)/m.exec(snippet)?.[1];
    expect(reloaded, 'the postrotate line').to.equal('extqs');
    expect(readFileSync(join(UNITS, `${reloaded}.service`), 'utf8')).to.match(/^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
  });
});
