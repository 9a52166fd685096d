import { availableParallelism } from 'node:os';
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSetting, readConfig as readConfigOf } from '../../common/config.ts';
import type { Config } from '../../common/settings.ts';
import { ConfigError, ConfigErrors, UsageError } from '../../common/configError.ts';
import { LOG_LEVELS } from '../../common/logFormat.ts';
import { formatUpstream, type Upstream } from '../../common/settingParsers.ts';

/** Every setting, as `extqs check` reads them. */
const readConfig = (argv: string[], env: NodeJS.ProcessEnv, cwd: string): Config => readConfigOf('check', argv, env, cwd);
const parsePort = (raw: string) => parseSetting('port', raw);
const parseListen = (raw: string) => parseSetting('listen', raw);
const parseUpstream = (raw: string): Upstream => {
  const [upstream, ...more] = parseSetting('upstreams', raw);
  expect(more).to.deep.equal([]);
  return upstream;
};

/** Runs `fn` and returns the ConfigError it throws; fails the test if it throws nothing or something else. */
function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return err as ConfigError;
  }
  expect.fail('expected a ConfigError');
}

describe('config', () => {
  const tempDirs: string[] = [];
  let cwd: string;

  function makeWww(parent: string, name: string, subs: string[]): string {
    const www = join(parent, name);
    for (const sub of subs) mkdirSync(join(www, sub), { recursive: true });
    return www;
  }

  before(() => {
    cwd = mkdtempSync(join(tmpdir(), 'extqs-config-'));
    tempDirs.push(cwd);
    makeWww(cwd, 'www', ['public', 'controllers']);
  });

  after(() => {
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  });

  describe('readConfig defaults', () => {
    let config: Config;
    before(() => {
      config = readConfig([], {}, cwd);
    });

    it('listens on port 8080 at 0.0.0.0', () => {
      expect(config.port).to.equal(8080);
      expect(config.listen).to.equal('0.0.0.0');
    });

    it('resolves www and logs against cwd and creates the logs directory', () => {
      expect(config.www).to.equal(join(cwd, 'www'));
      expect(config.logs).to.equal(join(cwd, 'logs'));
      expect(existsSync(join(cwd, 'logs'))).to.equal(true);
    });

    it('has no upstream and no socket, and host port 0 on loopback', () => {
      expect(config.upstreams).to.deep.equal([]);
      expect(config.hostListen).to.equal('127.0.0.1');
      expect(config.socket).to.equal(undefined);
      expect(config.hostPort).to.equal(0);
    });

    it('is frozen', () => {
      expect(Object.isFrozen(config)).to.equal(true);
    });

    it('gives exactly these values', () => {
      expect(config).to.deep.equal({
        port: 8080,
        listen: '0.0.0.0',
        tlsPort: 8443,
        tlsCert: undefined,
        tlsKey: undefined,
        tlsRedirect: 'off',
        h2MaxConcurrentStreams: 100,
        www: join(cwd, 'www'),
        followSymlinks: 'owner',
        logs: join(cwd, 'logs'),
        pidFile: undefined,
        errorDocuments: [],
        upstreams: [],
        upstreamMaxFails: 1,
        upstreamFailTimeout: 10,
        socket: undefined,
        hostListen: '127.0.0.1',
        hostPort: 0,
        hostAllow: [],
        mtlsCa: undefined,
        mtlsCert: undefined,
        mtlsKey: undefined,
        workers: Math.min(availableParallelism(), 256),
        pm: 'static',
        startWorkers: Math.floor(1 + (Math.min(3, Math.min(availableParallelism(), 256)) - 1) / 2),
        minSpareWorkers: 1,
        outputBuffering: 4096,
        maxSpareWorkers: Math.min(3, Math.min(availableParallelism(), 256)),
        spareWorkers: 0,
        workerConcurrency: 0,
        spoolMaxSize: 1024 ** 3,
        workerIdleTimeout: 10,
        listenBacklog: 511,
        proxyWorkers: Math.min(Math.ceil(availableParallelism() / 2), 256),
        maxRequests: 0,
        maxExecutionTime: 30,
        slowlogTimeout: 0,
        postMaxSize: 8 * 1024 * 1024,
        uploadMaxFilesize: 2 * 1024 * 1024,
        maxFileUploads: 20,
        upstreamTimeout: 30,
        forwarder: 'builtin',
        serverTokens: 'full',
        compression: ['gzip', 'br'],
        shutdownTimeout: 35,
        statusAllow: [
          { address: '127.0.0.0', prefix: 8, family: 'ipv4' },
          { address: '::1', prefix: 128, family: 'ipv6' },
        ],
        metricsPort: undefined,
        logLevel: 'info',
        logFormat: 'combined',
        logMaxSize: 0,
        logMaxFiles: 5,
        configFile: undefined,
        headerTimeout: 20,
        requestTimeout: 60,
        keepAliveTimeout: 5,
        maxHeaderSize: 16384,
        maxHeaderFields: 100,
        limitRequestFieldSize: 8190,
        limitRequestBody: 1024 ** 3,
        maxConnections: 0,
      });
    });
  });

  describe('the proxy workers by default', () => {
    const cpus = availableParallelism();
    const half = Math.ceil(cpus / 2);
    const proxyWorkers = (command: 'start' | 'proxy', argv: string[]) => readConfigOf(command, argv, {}, cwd).proxyWorkers;

    it('are half the CPUs, rounded up, beside a host on this machine', () => {
      expect(proxyWorkers('start', [])).to.equal(half);
      for (const upstream of ['unix:/run/extqs/host.sock', 'http://127.0.0.1:9000', 'http://localhost:9000', 'http://[::1]:9000'])
        expect(proxyWorkers('proxy', ['--upstream', upstream]), upstream).to.equal(half);
      expect(proxyWorkers('proxy', ['--upstream', 'http://10.0.0.5:9000', '--upstream', 'unix:/run/extqs/host.sock'])).to.equal(half);
    });

    it('are every CPU for a proxy whose hosts are elsewhere, as nginx worker_processes auto', () => {
      expect(proxyWorkers('proxy', ['--upstream', 'http://10.0.0.5:9000', '--upstream', 'http://hosts.example:9000'])).to.equal(cpus);
      expect(proxyWorkers('proxy', [])).to.equal(cpus);
    });

    it('are what --proxy-workers says when it is given', () => {
      expect(proxyWorkers('proxy', ['--upstream', 'http://10.0.0.5:9000', '--proxy-workers', '1'])).to.equal(1);
      expect(proxyWorkers('start', ['--proxy-workers', '3'])).to.equal(3);
    });
  });

  describe("the proxy's limits against slow or hostile clients", () => {
    it('reads each from its flag or its environment name', () => {
      const config = readConfig(
        ['--header-timeout', '2', '--request-timeout', '3', '--keep-alive-timeout', '0', '--max-header-size', '4096'],
        { MAX_HEADER_FIELDS: '20', MAX_CONNECTIONS: '900', EXTQS_LIMIT_REQUEST_FIELD_SIZE: '1000' },
        cwd,
      );
      expect(config).to.include({
        headerTimeout: 2,
        requestTimeout: 3,
        keepAliveTimeout: 0,
        maxHeaderSize: 4096,
        maxHeaderFields: 20,
        limitRequestFieldSize: 1000,
        maxConnections: 900,
      });
    });

    it('rejects a field size of 0, which would refuse every field', () => {
      expect(() => readConfig(['--limit-request-field-size', '0'], {}, cwd)).to.throw(
        ConfigError,
        '--limit-request-field-size (EXTQS_LIMIT_REQUEST_FIELD_SIZE) must be an integer from 1 to',
      );
    });

    it('rejects a header timeout of 0, which would mean none', () => {
      expect(() => readConfig(['--header-timeout', '0'], {}, cwd)).to.throw(
        ConfigError,
        '--header-timeout (EXTQS_HEADER_TIMEOUT) must be an integer from 1 to 3600, got "0"',
      );
    });

    it('rejects a request timeout shorter than the header timeout', () => {
      expect(() => readConfig(['--header-timeout', '30', '--request-timeout', '10'], {}, cwd)).to.throw(
        ConfigError,
        '--request-timeout (EXTQS_REQUEST_TIMEOUT) must be at least --header-timeout (30), got "10"',
      );
    });

    it("keeps the client keep-alive timeout below the host's 75 s", () => {
      expect(() => readConfig([], { KEEP_ALIVE_TIMEOUT: '75' }, cwd)).to.throw(
        ConfigError,
        '--keep-alive-timeout (EXTQS_KEEP_ALIVE_TIMEOUT) must be an integer from 0 to 60, got "75"',
      );
    });

    it('rejects a header size too small for any real request', () => {
      expect(() => readConfig(['--max-header-size', '100'], {}, cwd)).to.throw(
        ConfigError,
        '--max-header-size (EXTQS_MAX_HEADER_SIZE) must be an integer from 1024 to 1048576, got "100"',
      );
    });
  });

  describe('the host runtime settings', () => {
    it('reads --workers, --max-requests and --max-execution-time, or their environment names', () => {
      const config = readConfig(['--workers', '3', '--max-requests', '500'], { MAX_EXECUTION_TIME: '5' }, cwd);
      expect([config.workers, config.maxRequests, config.maxExecutionTime]).to.deep.equal([3, 500, 5]);
    });

    it('lets the proxy wait as long as a controller may run, unless --upstream-timeout says otherwise', () => {
      expect(readConfig(['--max-execution-time', '7'], {}, cwd).upstreamTimeout).to.equal(7);
      expect(readConfig(['--max-execution-time', '7', '--upstream-timeout', '9'], {}, cwd).upstreamTimeout).to.equal(9);
    });

    it('lets a stop wait for a controller to run out its limit, unless --shutdown-timeout says otherwise', () => {
      expect(readConfig(['--max-execution-time', '7'], {}, cwd).shutdownTimeout).to.equal(12);
      expect(readConfig(['--max-execution-time', '0'], {}, cwd).shutdownTimeout).to.equal(35);
      expect(readConfig([], { SHUTDOWN_TIMEOUT: '2' }, cwd).shutdownTimeout).to.equal(2);
      expect(configErrorOf(() => readConfig(['--shutdown-timeout=-1'], {}, cwd)).message).to.equal(
        '--shutdown-timeout (EXTQS_SHUTDOWN_TIMEOUT) must be an integer from 0 to 86400, got "-1"',
      );
    });

    it('chooses the forwarding engine, and rejects an unknown one naming the choices', () => {
      expect(readConfig(['--forwarder', 'http-proxy'], {}, cwd).forwarder).to.equal('http-proxy');
      expect(() => readConfig([], { FORWARDER: 'nginx' }, cwd)).to.throw(
        ConfigError,
        '--forwarder (EXTQS_FORWARDER) must be one of builtin, http-proxy, got "nginx"',
      );
    });

    it('refuses the retired undici engine as any unknown one, naming the choices left', () => {
      expect(() => readConfig(['--forwarder', 'undici'], {}, cwd)).to.throw(
        ConfigError,
        '--forwarder (EXTQS_FORWARDER) must be one of builtin, http-proxy, got "undici"',
      );
      expect(() => readConfig([], { EXTQS_FORWARDER: 'undici' }, cwd)).to.throw(ConfigError, 'got "undici"');
    });

    it('reads --follow-symlinks as owner, on or off, and rejects anything else naming the choices', () => {
      expect(readConfig([], {}, cwd).followSymlinks).to.equal('owner');
      expect(readConfig(['--follow-symlinks', 'off'], {}, cwd).followSymlinks).to.equal('off');
      expect(readConfig([], { FOLLOW_SYMLINKS: 'on' }, cwd).followSymlinks).to.equal('on');
      expect(() => readConfig(['--follow-symlinks', 'yes'], {}, cwd)).to.throw(
        ConfigError,
        '--follow-symlinks (EXTQS_FOLLOW_SYMLINKS) must be one of owner, on, off, got "yes"',
      );
    });

    it('reads --compression as a set of codings or off, and rejects anything else naming the choices', () => {
      expect(readConfig(['--compression', 'br'], {}, cwd).compression).to.deep.equal(['br']);
      expect(readConfig(['--compression', 'br, GZIP'], {}, cwd).compression).to.deep.equal(['gzip', 'br']);
      expect(readConfig([], { COMPRESSION: 'off' }, cwd).compression).to.deep.equal([]);
      const allowed = 'off, or one or more of gzip, br separated by commas (e.g. gzip,br)';
      for (const bad of ['deflate', 'gzip,', '', 'gzip,gzip', 'none']) {
        expect(() => readConfig(['--compression', bad], {}, cwd), bad).to.throw(
          ConfigError,
          bad === 'gzip,gzip'
            ? `${allowed}, each once`
            : `--compression (EXTQS_COMPRESSION) must be ${allowed}, got ${JSON.stringify(bad)}`,
        );
      }
    });

    it('rejects 0 workers, naming the setting, the value and the range', () => {
      expect(() => readConfig(['--workers', '0'], {}, cwd)).to.throw(
        ConfigError,
        '--workers (EXTQS_WORKERS) must be an integer from 1 to 256, got "0"',
      );
    });

    it('rejects a fractional --max-execution-time', () => {
      expect(() => readConfig(['--max-execution-time', '1.5'], {}, cwd)).to.throw(
        ConfigError,
        '--max-execution-time (EXTQS_MAX_EXECUTION_TIME) must be an integer from 0 to 86400, got "1.5"',
      );
    });
  });

  describe('readConfig precedence', () => {
    it('lets a flag beat the environment', () => {
      expect(readConfig(['--port', '81'], { PORT: '82' }, cwd).port).to.equal(81);
    });

    it('lets the environment beat the default', () => {
      expect(readConfig([], { PORT: '82' }, cwd).port).to.equal(82);
    });

    it('accepts the --name=value form', () => {
      expect(readConfig(['--port=83'], {}, cwd).port).to.equal(83);
    });

    it('applies precedence to every setting', () => {
      const config = readConfig(
        ['--listen', '127.0.0.1', '--upstream', 'http://127.0.0.1:9000'],
        { LISTEN: '::', EXTQS_UPSTREAM: 'unix:/tmp/ignored.sock', EXTQS_SOCKET: 'host.sock', EXTQS_HOST_PORT: '9100' },
        cwd,
      );
      expect(config.listen).to.equal('127.0.0.1');
      expect(config.upstreams).to.deep.equal([{ kind: 'tcp', host: '127.0.0.1', port: 9000 }]);
      expect(config.socket).to.equal(join(cwd, 'host.sock'));
      expect(config.hostPort).to.equal(9100);
    });

    it('reads WWW_ROOT and LOG_DIR from the environment, relative to cwd', () => {
      makeWww(cwd, 'other', ['public', 'controllers']);
      const config = readConfig([], { WWW_ROOT: 'other', LOG_DIR: 'other-logs' }, cwd);
      expect(config.www).to.equal(join(cwd, 'other'));
      expect(config.logs).to.equal(join(cwd, 'other-logs'));
    });
  });

  describe('readConfig port validation', () => {
    it('rejects --port 80a with a message naming the flag, the variable, the value and the range', () => {
      const err = configErrorOf(() => readConfig(['--port', '80a'], {}, cwd));
      expect(err.message).to.include('--port');
      expect(err.message).to.include('PORT');
      expect(err.message).to.include('"80a"');
      expect(err.message).to.include('0 to 65535');
      expect(err.message).to.equal('--port (EXTQS_PORT) must be an integer from 0 to 65535, got "80a"');
    });

    it('gives the error its name, code, setting and value', () => {
      const err = configErrorOf(() => readConfig(['--port', '80a'], {}, cwd));
      expect(err.name).to.equal('ConfigError');
      expect(err.code).to.equal('EXTQS_CONFIG');
      expect(err.setting).to.equal('--port (EXTQS_PORT)');
      expect(err.value).to.equal('80a');
    });

    it('rejects port 65536', () => {
      expect(configErrorOf(() => readConfig(['--port', '65536'], {}, cwd)).message).to.include('"65536"');
    });

    it('accepts port 65535', () => {
      expect(readConfig(['--port', '65535'], {}, cwd).port).to.equal(65535);
    });

    it('accepts port 0', () => {
      expect(readConfig(['--port', '0'], {}, cwd).port).to.equal(0);
    });

    it('takes --metrics-port none by default, a port, or 0; refuses a word and the public port', () => {
      expect(readConfig([], {}, cwd).metricsPort).to.equal(undefined);
      expect(readConfig(['--metrics-port', '9464'], {}, cwd).metricsPort).to.equal(9464);
      expect(readConfig([], { EXTQS_METRICS_PORT: '0' }, cwd).metricsPort).to.equal(0);
      expect(configErrorOf(() => readConfig(['--metrics-port', 'on'], {}, cwd)).message).to.equal(
        '--metrics-port (EXTQS_METRICS_PORT) must be none, or an integer from 0 to 65535, got "on"',
      );
      expect(configErrorOf(() => readConfig(['--port', '8080', '--metrics-port', '8080'], {}, cwd)).message).to.equal(
        '--metrics-port (EXTQS_METRICS_PORT) must be a port other than --port and --tls-port, or none, got "8080"',
      );
    });

    it('rejects a bad PORT from the environment', () => {
      expect(configErrorOf(() => readConfig([], { PORT: '-1' }, cwd)).value).to.equal('-1');
    });

    it('rejects a bad --host-port naming that setting', () => {
      expect(configErrorOf(() => readConfig(['--host-port', 'x'], {}, cwd)).setting).to.equal('--host-port (EXTQS_HOST_PORT)');
    });
  });

  describe('parsePort', () => {
    it('rejects an empty value, a sign, a decimal and spaces', () => {
      for (const raw of ['', '+1', '1.5', ' 80', '1e3', '123456']) {
        expect(() => parsePort(raw), raw).to.throw(ConfigError);
      }
    });

    it('accepts leading zeros within five digits', () => {
      expect(parsePort('00080')).to.equal(80);
    });
  });

  describe('readConfig listen validation', () => {
    it('rejects a bad --listen naming the setting and the value', () => {
      const err = configErrorOf(() => readConfig(['--listen', 'example.com'], {}, cwd));
      expect(err.setting).to.equal('--listen (EXTQS_LISTEN)');
      expect(err.message).to.include('--listen');
      expect(err.message).to.include('"example.com"');
    });

    it('accepts IPv4, IPv6 and localhost', () => {
      expect(parseListen('127.0.0.1')).to.equal('127.0.0.1');
      expect(parseListen('::')).to.equal('::');
      expect(parseListen('localhost')).to.equal('localhost');
    });

    it('rejects an IPv4 address out of range', () => {
      expect(() => parseListen('256.0.0.1')).to.throw(ConfigError);
    });
  });

  describe('readConfig www validation', () => {
    it('rejects a --www without controllers/ naming --www', () => {
      const partial = makeWww(cwd, 'no-controllers', ['public']);
      const err = configErrorOf(() => readConfig(['--www', partial], {}, cwd));
      expect(err.setting).to.equal('--www (EXTQS_WWW_ROOT)');
      expect(err.message).to.include('--www');
      expect(err.message).to.include(join(partial, 'controllers'));
    });

    it('rejects a --www without public/', () => {
      const partial = makeWww(cwd, 'no-public', ['controllers']);
      const err = configErrorOf(() => readConfig(['--www', partial], {}, cwd));
      expect(err.message).to.include(join(partial, 'public'));
    });

    it('rejects a --www that does not exist', () => {
      expect(configErrorOf(() => readConfig(['--www', 'missing'], {}, cwd)).value).to.equal('missing');
    });
  });

  describe('readConfig command line', () => {
    it('rejects an unknown flag, pointing at the help', () => {
      expect(() => readConfig(['--bogus', '1'], {}, cwd)).to.throw(UsageError, /^unknown option "--bogus"; see extqs check --help$/);
    });

    it('rejects a positional argument', () => {
      expect(() => readConfig(['extra'], {}, cwd)).to.throw(UsageError, /extra/);
    });

    it('rejects a flag without its value', () => {
      expect(() => readConfig(['--port'], {}, cwd)).to.throw(UsageError, /--port needs a value/);
    });

    it('reports a value starting with "-" as a bad value of its setting', () => {
      for (const argv of [['--workers', '-1'], ['--workers=-1']]) {
        expect(configErrorOf(() => readConfig(argv, {}, cwd)).message).to.equal(
          '--workers (EXTQS_WORKERS) must be an integer from 1 to 256, got "-1"',
        );
      }
    });

    it('suggests the flag meant by a typo or a prefix', () => {
      expect(() => readConfig(['--prot', '80'], {}, cwd)).to.throw(UsageError, /^unknown option "--prot" \(did you mean --port\?\)/);
      expect(() => readConfig(['--max-exec', '3'], {}, cwd)).to.throw(UsageError, /\(did you mean --max-execution-time\?\)/);
      expect(() => readConfig(['--proxy-workerz', '3'], {}, cwd)).to.throw(UsageError, /\(did you mean --proxy-workers\?\)/);
    });

    it('reports every problem at once: command line, values and file lines', () => {
      const file = join(cwd, 'bad.conf');
      writeFileSync(file, 'EXTQS_LOG_LEVEL=loud\nnot a line\nLOGLEVEL=info\n');
      let caught: unknown;
      try {
        readConfig(['--prot', '1', '--workers', '-1', 'extra', '--config', file], { EXTQS_PORT: 'x' }, cwd);
      } catch (err) {
        caught = err;
      }
      expect(caught).to.be.instanceOf(ConfigErrors);
      expect((caught as ConfigErrors).message.split('\n')).to.have.members([
        'unknown option "--prot" (did you mean --port?); see extqs check --help',
        'unexpected argument "extra": options are written --name value; see extqs check --help',
        `${file}:2 must be NAME=value, got "not a line"`,
        (caught as ConfigErrors).message.split('\n').find((line) => line.startsWith(`${file}:3 `))!,
        '--port (EXTQS_PORT) must be an integer from 0 to 65535, got "x"',
        '--workers (EXTQS_WORKERS) must be an integer from 1 to 256, got "-1"',
        `--log-level (EXTQS_LOG_LEVEL) must be one of ${LOG_LEVELS.join(', ')}, got "loud"`,
      ]);
      expect((caught as ConfigErrors).message).to.match(
        /:3 must be one of EXTQS_PORT, .*, got "LOGLEVEL" \(did you mean EXTQS_LOG_LEVEL\?\)/,
      );
    });
  });

  describe('environment names', () => {
    const readWarned = (env: NodeJS.ProcessEnv, argv: string[] = []) => {
      const lines: string[] = [];
      const config = readConfigOf('check', argv, env, cwd, (line) => lines.push(line));
      return { config, lines };
    };

    it('reads every setting from its EXTQS_ name, with no deprecation line', () => {
      const { config, lines } = readWarned({ EXTQS_PORT: '81', EXTQS_WORKERS: '3', EXTQS_LOG_LEVEL: 'warn' });
      expect(config).to.include({ port: 81, workers: 3, logLevel: 'warn' });
      expect(lines).to.deep.equal([]);
    });

    it('still reads the old names, naming all those read in one line', () => {
      const { config, lines } = readWarned({ PORT: '82', WORKERS: '2', COMPRESSION: 'off' });
      expect(config).to.include({ port: 82, workers: 2 });
      expect(config.compression).to.deep.equal([]);
      expect(lines).to.have.length(1);
      expect(lines[0]).to.match(/^extqs: deprecated setting names read: /);
      for (const name of ['PORT', 'WORKERS', 'COMPRESSION']) expect(lines[0]).to.contain(`${name} -> EXTQS_${name}`);
    });

    it('prefers the EXTQS_ name when both are set, and then warns of nothing', () => {
      const { config, lines } = readWarned({ PORT: '82', EXTQS_PORT: '83', LISTEN: 'nonsense', EXTQS_LISTEN: '::' });
      expect(config).to.include({ port: 83, listen: '::' });
      expect(lines).to.deep.equal([]);
    });

    it('does not warn of an old name a flag overrides', () => {
      expect(readWarned({ PORT: '82' }, ['--port', '84']).lines).to.deep.equal([]);
    });

    it('reads old names in a --config file too, below the EXTQS_ name whatever the order', () => {
      const file = join(cwd, 'old.conf');
      writeFileSync(file, 'EXTQS_WORKERS=3\nWORKERS=2\nLOG_LEVEL=error\n');
      const { config, lines } = readWarned({}, ['--config', file]);
      expect(config).to.include({ workers: 3, logLevel: 'error' });
      expect(lines).to.have.length(1);
      expect(lines[0]).to.contain('LOG_LEVEL -> EXTQS_LOG_LEVEL');
      expect(lines[0]).not.to.contain('WORKERS');
    });
  });

  describe('parseUpstream', () => {
    it('accepts unix:/tmp/x.sock', () => {
      expect(parseUpstream('unix:/tmp/x.sock')).to.deep.equal({ kind: 'unix', path: '/tmp/x.sock' });
    });

    it('accepts http://127.0.0.1:9000', () => {
      expect(parseUpstream('http://127.0.0.1:9000')).to.deep.equal({ kind: 'tcp', host: '127.0.0.1', port: 9000 });
    });

    it('accepts localhost and [::1] with a trailing slash', () => {
      expect(parseUpstream('http://localhost:9000/')).to.deep.equal({ kind: 'tcp', host: 'localhost', port: 9000 });
      expect(parseUpstream('http://[::1]:9001')).to.deep.equal({ kind: 'tcp', host: '::1', port: 9001 });
    });

    it('accepts a host on another machine, by address or name (hosts behind one proxy)', () => {
      expect(parseUpstream('http://10.0.0.5:9000')).to.deep.equal({ kind: 'tcp', host: '10.0.0.5', port: 9000 });
      expect(parseUpstream('http://app-2.internal:9000')).to.deep.equal({ kind: 'tcp', host: 'app-2.internal', port: 9000 });
    });

    it('rejects a path, credentials or a bad IPv6 literal after http://', () => {
      for (const raw of ['http://10.0.0.5:9000/app', 'http://user@10.0.0.5:9000', 'http://[zz]:9000']) {
        const err = configErrorOf(() => parseUpstream(raw));
        expect(err.setting, raw).to.equal('--upstream (EXTQS_UPSTREAM)');
        expect(err.value).to.equal(raw);
      }
    });

    it('takes several upstreams from the repeated flag, in order, or from the comma-separated variable', () => {
      const fromFlags = readConfig(['--upstream', 'unix:/run/a.sock', '--upstream', 'http://10.0.0.6:9000'], {}, cwd);
      expect(fromFlags.upstreams).to.deep.equal([
        { kind: 'unix', path: '/run/a.sock' },
        { kind: 'tcp', host: '10.0.0.6', port: 9000 },
      ]);
      const fromEnv = readConfig([], { EXTQS_UPSTREAM: 'http://10.0.0.5:9000, http://10.0.0.6:9000' }, cwd);
      expect(fromEnv.upstreams.map(formatUpstream)).to.deep.equal(['http://10.0.0.5:9000', 'http://10.0.0.6:9000']);
    });

    it('rejects the same upstream given twice', () => {
      const err = configErrorOf(() => readConfig(['--upstream', 'unix:/run/a.sock', '--upstream', 'unix:/run/a.sock'], {}, cwd));
      expect(err.message).to.equal(
        '--upstream (EXTQS_UPSTREAM) must be unix:/path/to/socket, http://<host>:<port> or https://<host>:<port>, each given once (unix:/run/a.sock is given twice), got "unix:/run/a.sock,unix:/run/a.sock"',
      );
    });

    it('reads --status-allow as addresses and subnets, and names a bad item', () => {
      expect(readConfig(['--status-allow', '10.1.0.0/16, 192.0.2.7'], {}, cwd).statusAllow).to.deep.equal([
        { address: '10.1.0.0', prefix: 16, family: 'ipv4' },
        { address: '192.0.2.7', prefix: 32, family: 'ipv4' },
      ]);
      for (const raw of ['10.1.0.0/33', 'example.com', '10.0.0.1/8/1', '::1/129']) {
        const err = configErrorOf(() => readConfig([], { STATUS_ALLOW: raw }, cwd));
        expect(err.setting, raw).to.equal('--status-allow (EXTQS_STATUS_ALLOW)');
        expect(err.message).to.contain(`${JSON.stringify(raw.split(',')[0])} is not one`);
      }
    });

    it('rejects a bad --upstream-max-fails or --upstream-fail-timeout, naming it', () => {
      expect(configErrorOf(() => readConfig(['--upstream-max-fails', '0'], {}, cwd)).message).to.equal(
        '--upstream-max-fails (EXTQS_UPSTREAM_MAX_FAILS) must be an integer from 1 to 1000, got "0"',
      );
      expect(configErrorOf(() => readConfig([], { UPSTREAM_FAIL_TIMEOUT: '10s' }, cwd)).setting).to.equal(
        '--upstream-fail-timeout (EXTQS_UPSTREAM_FAIL_TIMEOUT)',
      );
    });

    it('rejects another scheme (ftp://x)', () => {
      expect(() => parseUpstream('ftp://x')).to.throw(ConfigError);
    });

    it('rejects port 0, a port above 65535 and a missing port', () => {
      for (const raw of ['http://127.0.0.1:0', 'http://127.0.0.1:65536', 'http://127.0.0.1']) {
        expect(() => parseUpstream(raw), raw).to.throw(ConfigError);
      }
    });

    it('rejects unix: without a path', () => {
      expect(() => parseUpstream('unix:')).to.throw(ConfigError);
    });

    it('round-trips through formatUpstream', () => {
      expect(formatUpstream(parseUpstream('unix:/tmp/x.sock'))).to.equal('unix:/tmp/x.sock');
      expect(formatUpstream(parseUpstream('http://[::1]:9001/'))).to.equal('http://[::1]:9001');
    });
  });
});
