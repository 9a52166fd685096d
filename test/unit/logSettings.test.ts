import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseConfigFile, readConfig } from '../../common/config.ts';
import { ConfigError } from '../../common/configError.ts';
import { LOG_LEVELS, levelEnabled } from '../../common/logFormat.ts';

function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return err as ConfigError;
  }
  expect.fail('expected a ConfigError');
}

describe('log settings', () => {
  let cwd: string;
  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'extqs-logsettings-'));
    for (const sub of ['public', 'controllers']) mkdirSync(join(cwd, 'www', sub), { recursive: true });
  });
  after(() => rmSync(cwd, { recursive: true, force: true }));
  const read = (argv: string[], env: NodeJS.ProcessEnv = {}) => readConfig('check', argv, env, cwd);

  describe('levels', () => {
    it("are Apache's sixteen, most severe first", () => {
      expect(LOG_LEVELS).to.deep.equal([
        'emerg',
        'alert',
        'crit',
        'error',
        'warn',
        'notice',
        'info',
        'debug',
        'trace1',
        'trace2',
        'trace3',
        'trace4',
        'trace5',
        'trace6',
        'trace7',
        'trace8',
      ]);
    });

    it('write a line at or above the setting and drop the ones below', () => {
      expect(levelEnabled('info', 'info')).to.equal(true);
      expect(levelEnabled('error', 'info')).to.equal(true);
      expect(levelEnabled('debug', 'info')).to.equal(false);
      expect(levelEnabled('info', 'warn')).to.equal(false);
      expect(levelEnabled('emerg', 'emerg')).to.equal(true);
      expect(levelEnabled('trace8', 'trace7')).to.equal(false);
      expect(levelEnabled('trace8', 'trace8')).to.equal(true);
    });

    it('always write notice lines (start, stop, SIGHUP), as Apache does to a file log', () => {
      expect(levelEnabled('notice', 'warn')).to.equal(true);
      expect(levelEnabled('notice', 'emerg')).to.equal(true);
      expect(levelEnabled('info', 'emerg')).to.equal(false);
    });

    it('default to info, so the favicon miss ([core:info]) shows', () => {
      expect(read([]).logLevel).to.equal('info');
      expect(levelEnabled('info', read([]).logLevel)).to.equal(true);
    });

    it('come from --log-level before LOG_LEVEL', () => {
      expect(read(['--log-level', 'warn'], { LOG_LEVEL: 'debug' }).logLevel).to.equal('warn');
      expect(read([], { LOG_LEVEL: 'trace3' }).logLevel).to.equal('trace3');
    });

    it('refuse an unknown level, naming the setting, the value and the levels', () => {
      const err = configErrorOf(() => read(['--log-level', 'verbose']));
      expect(err.message).to.equal(`--log-level (EXTQS_LOG_LEVEL) must be one of ${LOG_LEVELS.join(', ')}, got "verbose"`);
      expect(configErrorOf(() => read([], { LOG_LEVEL: 'INFO' })).message).to.contain('got "INFO"');
      expect(configErrorOf(() => read([], { LOG_LEVEL: 'trace9' })).message).to.contain('got "trace9"');
    });
  });

  describe('format', () => {
    it('is combined by default, json on request', () => {
      expect(read([]).logFormat).to.equal('combined');
      expect(read(['--log-format', 'json']).logFormat).to.equal('json');
      expect(read([], { LOG_FORMAT: 'json' }).logFormat).to.equal('json');
    });

    it('refuses anything else', () => {
      expect(configErrorOf(() => read(['--log-format', 'xml'])).message).to.equal(
        '--log-format (EXTQS_LOG_FORMAT) must be one of combined, json, or an Apache LogFormat string (e.g. "%h %t \\"%r\\" %>s %D"), got "xml"',
      );
    });
  });

  describe('rotation', () => {
    it('reads sizes in bytes with k, m or g (powers of 1024)', () => {
      expect(read([]).logMaxSize).to.equal(0);
      expect(read(['--log-max-size', '65536']).logMaxSize).to.equal(65536);
      expect(read(['--log-max-size', '512k']).logMaxSize).to.equal(512 * 1024);
      expect(read(['--log-max-size', '100M']).logMaxSize).to.equal(100 * 1024 * 1024);
      expect(read([], { LOG_MAX_SIZE: '1g' }).logMaxSize).to.equal(1024 ** 3);
    });

    for (const bad of ['-1', '10 m', '1.5m', '10kb', 'big', '']) {
      it(`refuses the size ${JSON.stringify(bad)}`, () => {
        const err = configErrorOf(() => read([], { LOG_MAX_SIZE: bad }));
        expect(err.message).to.match(/^--log-max-size \(EXTQS_LOG_MAX_SIZE\) must be a size in bytes/);
        expect(err.message).to.contain(`got ${JSON.stringify(bad)}`);
      });
    }

    it('keeps 5 rotated files by default, 1 to 1000 allowed', () => {
      expect(read([]).logMaxFiles).to.equal(5);
      expect(read(['--log-max-files', '1']).logMaxFiles).to.equal(1);
      expect(configErrorOf(() => read(['--log-max-files', '0'])).message).to.equal(
        '--log-max-files (EXTQS_LOG_MAX_FILES) must be an integer from 1 to 1000, got "0"',
      );
    });
  });

  describe('the --config file', () => {
    it('reads NAME=value lines with comments and blank lines, below flags and environment', () => {
      const file = join(cwd, 'extqs.conf');
      writeFileSync(file, '# settings\n\nLOG_LEVEL=debug\nLOG_FORMAT = "json"\nWORKERS=3\n');
      const fromFile = read(['--config', file]);
      expect(fromFile).to.include({ logLevel: 'debug', logFormat: 'json', workers: 3, configFile: file });
      expect(read(['--config', file, '--log-level', 'warn']).logLevel).to.equal('warn');
      expect(read([], { EXTQS_CONFIG: file, LOG_LEVEL: 'error' }).logLevel).to.equal('error');
      expect(read([], { EXTQS_CONFIG: file }).workers).to.equal(3);
    });

    it('names the file and line of an unknown setting or a line that is not NAME=value', () => {
      expect(configErrorOf(() => parseConfigFile('LOG_LEVEL=info\nLOGLEVEL=debug\n', '/etc/extqs.conf')).message).to.match(
        /^\/etc\/extqs\.conf:2 must be one of EXTQS_PORT, .*EXTQS_LOG_LEVEL.*, got "LOGLEVEL" \(did you mean EXTQS_LOG_LEVEL\?\)$/,
      );
      expect(configErrorOf(() => parseConfigFile('log level debug', 'f')).message).to.equal(
        'f:1 must be NAME=value, got "log level debug"',
      );
    });

    it('refuses a file it cannot read', () => {
      expect(configErrorOf(() => read(['--config', join(cwd, 'missing.conf')])).message).to.match(
        /^--config \(EXTQS_CONFIG\) must be a readable file of NAME=value lines \(ENOENT/,
      );
    });

    it('checks the values it gives as a flag would be checked', () => {
      const file = join(cwd, 'bad.conf');
      writeFileSync(file, 'LOG_LEVEL=loud\n');
      expect(configErrorOf(() => read(['--config', file])).message).to.contain('--log-level (EXTQS_LOG_LEVEL) must be one of');
    });
  });
});
