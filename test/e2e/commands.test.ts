// The `extqs` command as an operator meets it: every flag of every command accepted by exactly the
// commands that take it and refused by the others (table-driven from common/settings.ts), each setting
// reaching the process that uses it, --help, --version, `check`, and the built JavaScript running.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { existsSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { COMMANDS, type Command } from '../../common/commands.ts';
import { takes } from '../../common/config.ts';
import { SETTING_KEYS, specOf, type SettingKey } from '../../common/settings.ts';
import { makeCertificate } from '../../tools/certificate.ts';
import { get } from '../helpers/http.ts';
import {
  descendants,
  eventually,
  makeSandbox,
  readLog,
  ROOT,
  spawnReady,
  startProcess,
  startProxy,
  startStack,
  type Running,
  type Sandbox,
} from '../helpers/stack.ts';

function extqs(args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, ['bin/extqs.js', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

/**
 * A valid value for every setting, none of them the default, and how each process shows it in its
 * settings line. Typed by the table: a new setting without a sample here does not compile.
 */
function samples(sandbox: Sandbox): Record<SettingKey, { value: string; shown: string }> {
  const configFile = join(sandbox.dir, 'extqs.conf');
  writeFileSync(configFile, '# nothing but a comment\n');
  const socket = join(sandbox.dir, 'own.sock');
  const { cert, key } = makeCertificate(sandbox.dir);
  return {
    port: { value: '0', shown: '--port 0' },
    listen: { value: '127.0.0.1', shown: '--listen "127.0.0.1"' },
    tlsPort: { value: '0', shown: '--tls-port 0' },
    tlsCert: { value: cert, shown: `--tls-cert ${JSON.stringify(cert)}` },
    tlsKey: { value: key, shown: `--tls-key ${JSON.stringify(key)}` },
    tlsRedirect: { value: 'on', shown: '--tls-redirect "on"' },
    h2MaxConcurrentStreams: { value: '50', shown: '--h2-max-concurrent-streams 50' },
    proxyWorkers: { value: '2', shown: '--proxy-workers 2' },
    www: { value: sandbox.www, shown: `--www ${JSON.stringify(sandbox.www)}` },
    followSymlinks: { value: 'off', shown: '--follow-symlinks "off"' },
    serverTokens: { value: 'prod', shown: '--server-tokens "prod"' },
    logs: { value: sandbox.logs, shown: `--logs ${JSON.stringify(sandbox.logs)}` },
    configFile: { value: configFile, shown: `--config ${JSON.stringify(configFile)}` },
    pidFile: { value: join(sandbox.dir, 'extqs.pid'), shown: '' },
    workers: { value: '1', shown: '--workers 1' },
    spareWorkers: { value: '0', shown: '--spare-workers 0' },
    workerConcurrency: { value: '4', shown: '--worker-concurrency 4' },
    spoolMaxSize: { value: '2g', shown: `--spool-max-size ${2 * 1024 ** 3}` },
    pm: { value: 'ondemand', shown: '--pm "ondemand"' },
    startWorkers: { value: '3', shown: '--start-workers 3' },
    minSpareWorkers: { value: '2', shown: '--min-spare-workers 2' },
    maxSpareWorkers: { value: '4', shown: '--max-spare-workers 4' },
    workerIdleTimeout: { value: '9', shown: '--worker-idle-timeout 9' },
    listenBacklog: { value: '100', shown: '--listen-backlog 100' },
    maxRequests: { value: '1000', shown: '--max-requests 1000' },
    maxExecutionTime: { value: '11', shown: '--max-execution-time 11' },
    slowlogTimeout: { value: '3', shown: '--slowlog-timeout 3' },
    postMaxSize: { value: '16m', shown: `--post-max-size ${16 * 1024 * 1024}` },
    outputBuffering: { value: '8k', shown: '--output-buffering 8192' },
    uploadMaxFilesize: { value: '3m', shown: `--upload-max-filesize ${3 * 1024 * 1024}` },
    maxFileUploads: { value: '21', shown: '--max-file-uploads 21' },
    upstreamTimeout: { value: '12', shown: '--upstream-timeout 12' },
    shutdownTimeout: { value: '13', shown: '--shutdown-timeout 13' },
    forwarder: { value: 'http-proxy', shown: '--forwarder "http-proxy"' },
    statusAllow: { value: '127.0.0.1', shown: '--status-allow "127.0.0.1/32"' },
    metricsPort: { value: '0', shown: '--metrics-port 0' },
    compression: { value: 'br', shown: '--compression "br"' },
    errorDocuments: { value: `503=${configFile}`, shown: `--error-document ${JSON.stringify(`503=${configFile}`)}` },
    upstreams: { value: `unix:${socket}`, shown: `--upstream ${JSON.stringify(`unix:${socket}`)}` },
    upstreamMaxFails: { value: '3', shown: '--upstream-max-fails 3' },
    upstreamFailTimeout: { value: '4', shown: '--upstream-fail-timeout 4' },
    socket: { value: socket, shown: `--socket ${JSON.stringify(socket)}` },
    hostListen: { value: '127.0.0.1', shown: '--host-listen "127.0.0.1"' },
    hostPort: { value: '0', shown: '--host-port 0' },
    mtlsCa: { value: cert, shown: `--mtls-ca ${JSON.stringify(cert)}` },
    mtlsCert: { value: cert, shown: `--mtls-cert ${JSON.stringify(cert)}` },
    mtlsKey: { value: key, shown: `--mtls-key ${JSON.stringify(key)}` },
    hostAllow: { value: '127.0.0.2,10.1.0.0/16', shown: '--host-allow "127.0.0.2/32,10.1.0.0/16"' },
    logLevel: { value: 'debug', shown: '--log-level "debug"' },
    logFormat: { value: 'combined', shown: '--log-format "combined"' },
    logMaxSize: { value: '64m', shown: `--log-max-size ${64 * 1024 * 1024}` },
    logMaxFiles: { value: '7', shown: '--log-max-files 7' },
    headerTimeout: { value: '21', shown: '--header-timeout 21' },
    requestTimeout: { value: '61', shown: '--request-timeout 61' },
    keepAliveTimeout: { value: '6', shown: '--keep-alive-timeout 6' },
    maxHeaderSize: { value: '20000', shown: '--max-header-size 20000' },
    maxHeaderFields: { value: '101', shown: '--max-header-fields 101' },
    limitRequestFieldSize: { value: '8000', shown: '--limit-request-field-size 8000' },
    limitRequestBody: { value: '2g', shown: `--limit-request-body ${2 * 1024 ** 3}` },
    maxConnections: { value: '1000', shown: '--max-connections 1000' },
  };
}

/** Every flag `command` takes, with its sample value. */
function allFlagsOf(command: Command, sample: ReturnType<typeof samples>): string[] {
  return SETTING_KEYS.filter((key) => takes(command, key)).flatMap((key) => [`--${specOf(key).flag}`, sample[key].value]);
}

/** The settings line a process wrote at start-up (a line reaches the file in the turn after it is logged). */
function settingsLine(sandbox: Sandbox, file: 'error.log' | 'host.log'): Promise<string> {
  return eventually(() => readLog(sandbox, file).find((l) => /\] [Ss]ettings: /.test(l)), 3000, `the settings line in ${file}`);
}

describe('the extqs command', function () {
  let sandbox: Sandbox;
  beforeEach(() => (sandbox = makeSandbox()));
  afterEach(() => sandbox.remove());

  describe('a flag the command does not take', function () {
    for (const command of COMMANDS) {
      for (const key of SETTING_KEYS.filter((k) => !takes(command, k))) {
        const flag = `--${specOf(key).flag}`;
        it(`extqs ${command} refuses ${flag} with exit 2, naming the commands that take it`, function () {
          const result = extqs([command, flag, samples(sandbox)[key].value, '--www', sandbox.www, '--logs', sandbox.logs]);
          expect(result.status, result.stderr).to.equal(2);
          const takers = COMMANDS.filter((c) => takes(c, key)).map((c) => `extqs ${c}`);
          expect(result.stderr).to.contain(`extqs ${command}: ${flag} is not an option of extqs ${command}`);
          expect(result.stderr).to.contain(`it is taken by ${takers.join(', ')}`);
          expect(result.stdout).to.equal('');
        });
      }
    }
  });

  describe('every flag the command takes', function () {
    const running: Running[] = [];
    afterEach(async () => {
      for (const child of running.splice(0)) await child.stop();
    });

    it('extqs start hands each setting to the process that uses it (its settings line shows the value)', async function () {
      const sample = samples(sandbox);
      running.push(await spawnReady(['bin/extqs.js', 'start', ...allFlagsOf('start', sample)]));
      const proxyLine = await settingsLine(sandbox, 'error.log');
      const hostLine = await settingsLine(sandbox, 'host.log');
      for (const key of SETTING_KEYS.filter((k) => takes('start', k))) {
        if (key === 'port') continue; // 0: the proxy is handed the port it bound on its first start
        if (specOf(key).roles.includes('proxy')) expect(proxyLine, key).to.contain(sample[key].shown);
        if (specOf(key).roles.includes('host')) expect(hostLine, key).to.contain(sample[key].shown);
      }
    });

    it('extqs host and extqs proxy run with every one of their flags set', async function () {
      const sample = samples(sandbox);
      const host = await startProcess('host', allFlagsOf('host', sample));
      running.push(host);
      const proxy = await startProcess('proxy', allFlagsOf('proxy', sample));
      running.push(proxy);
      const hostLine = await settingsLine(sandbox, 'host.log');
      const proxyLine = await settingsLine(sandbox, 'error.log');
      for (const key of SETTING_KEYS) {
        if (takes('host', key)) expect(hostLine, key).to.contain(sample[key].shown);
        if (takes('proxy', key)) expect(proxyLine, key).to.contain(sample[key].shown);
      }
    });
  });

  describe('--help and --version', function () {
    it('extqs --help lists every command, on stdout, exit 0', function () {
      for (const args of [['--help'], ['-h']]) {
        const result = extqs(args);
        expect(result.status).to.equal(0);
        for (const command of COMMANDS) expect(result.stdout).to.match(new RegExp(`^  ${command} `, 'm'));
      }
    });

    for (const command of COMMANDS) {
      it(`extqs ${command} --help lists exactly the flags it takes, with their variables`, function () {
        const result = extqs([command, '--help']);
        expect(result.status).to.equal(0);
        const listed = [...result.stdout.matchAll(/^ {2}--([a-z0-9-]+) [A-Z=]+ +([A-Z0-9_]+),/gm)].map((m) => [m[1], m[2]]);
        const expected = SETTING_KEYS.filter((key) => takes(command, key)).map((key) => [specOf(key).flag, specOf(key).env]);
        expect(listed).to.deep.equal(expected);
      });
    }

    it('extqs --version prints the package version', function () {
      const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
      const result = extqs(['--version']);
      expect(result.status).to.equal(0);
      expect(result.stdout).to.equal(`extqs ${version} (Node.js ${process.version})\n`);
    });

    it('bare extqs prints the usage on stderr and exits 2: a script that lost its command must not succeed', function () {
      const result = extqs([]);
      expect(result.status).to.equal(2);
      expect(result.stdout).to.equal('');
      for (const command of COMMANDS) expect(result.stderr).to.match(new RegExp(`^  ${command} `, 'm'));
      expect(result.stderr).to.contain('extqs: a command is required: start, proxy, host, dev, check');
    });

    it('refuses an unknown command with exit 2 and the list of commands', function () {
      const result = extqs(['serve']);
      expect(result.status).to.equal(2);
      expect(result.stderr).to.contain('extqs: unknown command "serve"; the commands are start, proxy, host, dev, check');
    });
  });

  describe('mistakes on the command line and in the --config file', function () {
    it('extqs start reports them all at once, exit 2: values starting with "-", typos with a suggestion, every bad file line', function () {
      const file = join(sandbox.dir, 'extqs.conf');
      writeFileSync(file, '# comment\nEXTQS_WORKERS=2\nLOGLEVEL=debug\nthis is not a setting\nEXTQS_KEEP_ALIVE_TIMEOUT=-3\n');
      const result = extqs(['start', '--www', sandbox.www, '--logs', sandbox.logs, '--workers', '-1', '--prot', '80', '--config', file]);
      expect(result.status, result.stderr).to.equal(2);
      expect(result.stdout).to.equal('');
      expect(result.stderr).not.to.contain('ambiguous');
      const lines = result.stderr.trim().split('\n');
      expect(lines).to.have.length(5);
      expect(lines).to.include.members([
        'extqs start: unknown option "--prot" (did you mean --port?); see extqs start --help',
        `${file}:4 must be NAME=value, got "this is not a setting"`,
        '--workers (EXTQS_WORKERS) must be an integer from 1 to 256, got "-1"',
        '--keep-alive-timeout (EXTQS_KEEP_ALIVE_TIMEOUT) must be an integer from 0 to 60, got "-3"',
      ]);
      expect(lines.find((line) => line.startsWith(`${file}:3 `))).to.match(/got "LOGLEVEL" \(did you mean EXTQS_LOG_LEVEL\?\)$/);
      // Nothing was started: no log file was opened.
      expect(readLog(sandbox, 'error.log')).to.deep.equal([]);
    });

    it('extqs start refuses the retired undici engine with exit 2, naming the setting, the value and the choices left', function () {
      const result = extqs(['start', '--www', sandbox.www, '--logs', sandbox.logs, '--forwarder', 'undici']);
      expect(result.status, result.stderr).to.equal(2);
      expect(result.stdout).to.equal('');
      expect(result.stderr.trim()).to.equal('extqs start: --forwarder (EXTQS_FORWARDER) must be one of builtin, http-proxy, got "undici"');
      expect(readLog(sandbox, 'error.log')).to.deep.equal([]);
    });
  });

  describe('environment names', function () {
    let running: Running | undefined;
    afterEach(async () => running?.stop());

    it('reads EXTQS_ names over the old ones, and the old ones alone with one deprecation line, not repeated on SIGHUP', async function () {
      running = await spawnReady(['bin/extqs.js', 'start', '--listen', '127.0.0.1', '--www', sandbox.www, '--logs', sandbox.logs], {
        // Were PORT read, start-up would stop on its value.
        EXTQS_PORT: '0',
        PORT: 'taken-by-another-program',
        WORKERS: '2',
        EXTQS_PROXY_WORKERS: '1',
        LOG_LEVEL: 'debug',
      });
      expect(await settingsLine(sandbox, 'host.log')).to.contain('--workers 2');
      expect(await settingsLine(sandbox, 'error.log')).to.contain('--log-level "debug"');
      const deprecation = (text: string) => text.split('\n').filter((line) => line.includes('deprecated setting names'));
      expect(deprecation(running.stderr())).to.deep.equal([
        'extqs: deprecated setting names read: WORKERS -> EXTQS_WORKERS, LOG_LEVEL -> EXTQS_LOG_LEVEL; the names without EXTQS_ are read until extqs 0.2',
      ]);
      running.child.kill('SIGHUP');
      await eventually(() => running!.stderr().includes('SIGHUP: the children reopen their logs') || undefined, 5000, 'the SIGHUP line');
      expect(deprecation(running.stderr())).to.have.length(1);
    });
  });

  describe('--pid-file', function () {
    let running: Running | undefined;
    afterEach(async () => running?.stop());

    it("holds the launcher's pid at its ready line, takes logrotate's SIGHUP, and is removed at exit", async function () {
      const pidFile = join(sandbox.dir, 'run', 'extqs.pid');
      mkdirSync(join(sandbox.dir, 'run'));
      // A file left by a launcher that was killed, naming a live process (this one): overwritten, as nginx does.
      writeFileSync(pidFile, `${process.pid}\n`);
      running = await startStack(sandbox, ['--pid-file', pidFile]);
      expect(readFileSync(pidFile, 'utf8')).to.equal(`${running.child.pid}\n`);
      // What the logrotate postrotate of docs/operations.md does: kill -HUP "$(cat the pid file)".
      process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGHUP');
      await eventually(() => running!.stderr().includes('SIGHUP: the children reopen their logs') || undefined, 5000, 'the SIGHUP line');
      expect(await running.stop()).to.equal(0);
      expect(existsSync(pidFile)).to.equal(false);
    });

    it('refuses a pid file in a directory that does not exist before starting anything, exit 2', function () {
      const pidFile = join(sandbox.dir, 'missing', 'extqs.pid');
      const result = extqs(['start', '--www', sandbox.www, '--logs', sandbox.logs, '--pid-file', pidFile]);
      expect(result.status).to.equal(2);
      expect(result.stderr).to.contain(`--pid-file (EXTQS_PID_FILE) must be a file in a writable directory (ENOENT`);
    });
  });

  describe('under systemd (Type=notify)', function () {
    const running: Running[] = [];
    let listener: ChildProcess | undefined;
    afterEach(async () => {
      for (const child of running.splice(0)) await child.stop();
      if (listener && listener.exitCode === null && listener.signalCode === null) {
        const exited = once(listener, 'exit');
        listener.kill('SIGTERM');
        await exited;
      }
    });

    /** What systemd does: a unix datagram socket as NOTIFY_SOCKET, each message received one line. */
    async function notifySocket(): Promise<{ path: string; lines: string[] }> {
      const path = join(sandbox.dir, 'notify.sock');
      const script = [
        'import socket, sys',
        's = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)',
        's.bind(sys.argv[1])',
        'print("bound", flush=True)',
        'while True: print(s.recv(4096).decode().replace("\\n", " ").strip(), flush=True)',
      ].join('\n');
      listener = spawn('python3', ['-c', script, path], { stdio: ['ignore', 'pipe', 'inherit'] });
      const lines: string[] = [];
      const reader = createInterface({ input: listener.stdout! });
      reader.on('line', (line) => lines.push(line));
      await eventually(() => lines.includes('bound') || undefined, 5000, 'the notify socket');
      return { path, lines };
    }

    it('extqs start sends READY=1 once, after its ready line, and never from its children', async function () {
      const socket = await notifySocket();
      const stack = await startStack(sandbox, [], { NOTIFY_SOCKET: socket.path });
      running.push(stack);
      await eventually(() => socket.lines.includes('READY=1') || undefined, 5000, 'READY=1');
      expect(stack.stdout()).to.match(/^listening on /m);
      // A host or proxy child that also spoke would have done so before the launcher's ready line.
      expect(await stack.stop()).to.equal(0);
      // systemd-notify follows READY=1 with BARRIER=1 (it waits for systemd to have read it).
      expect(socket.lines.filter((line) => line.includes('READY'))).to.deep.equal(['READY=1']);
    });

    it('extqs proxy and extqs host on their own each send READY=1 once they listen', async function () {
      const socket = await notifySocket();
      const host = await startProcess('host', ['--www', sandbox.www, '--logs', sandbox.logs, '--workers', '1'], {
        NOTIFY_SOCKET: socket.path,
      });
      running.push(host);
      const readies = () => socket.lines.filter((line) => line === 'READY=1').length;
      await eventually(() => readies() === 1 || undefined, 5000, "the host's READY=1");
      running.push(await startProxy(sandbox, ['--upstream', host.url.replace('listening on ', '')], { NOTIFY_SOCKET: socket.path }));
      await eventually(() => readies() === 2 || undefined, 5000, "the proxy's READY=1");
    });
  });

  describe('--error-document', function () {
    let running: Running | undefined;
    afterEach(async () => running?.stop());

    it("answers the operator's page for its status, reads it again on SIGHUP, and keeps Apache's for the others", async function () {
      const page = join(sandbox.dir, 'pages', 'not found é.html');
      mkdirSync(join(sandbox.dir, 'pages'));
      writeFileSync(page, '<h1>Not here, sorry</h1>\n');
      running = await startStack(sandbox, ['--error-document', `404=${page}`]);
      const missing = await get(running.url, '/no-such-file.txt');
      expect(missing.status).to.equal(404);
      expect(missing.headers['content-type']).to.equal('text/html; charset=utf-8');
      expect(missing.body).to.equal('<h1>Not here, sorry</h1>\n');
      // 405 has no page of its own: Apache's.
      const refused = await get(running.url, '/index.html', { method: 'DELETE' });
      expect(refused.status).to.equal(405);
      expect(refused.body).to.contain('<!DOCTYPE HTML PUBLIC');

      writeFileSync(page, '<h1>Still not here</h1>\n');
      running.child.kill('SIGHUP');
      await eventually(
        async () => (await get(running!.url, '/no-such-file.txt')).body === '<h1>Still not here</h1>\n' || undefined,
        5000,
        'the page read again',
      );
    });

    it('stops start-up naming a page that cannot be read, exit 2', function () {
      const page = join(sandbox.dir, 'missing.html');
      const result = extqs(['start', '--www', sandbox.www, '--logs', sandbox.logs, '--error-document', `503=${page}`]);
      expect(result.status).to.equal(2);
      expect(result.stderr).to.contain('--error-document (EXTQS_ERROR_DOCUMENT) must be CODE=FILE items separated by commas');
      expect(result.stderr).to.contain(page);
    });

    it('refuses a status it does not take', function () {
      const result = extqs(['check', '--www', sandbox.www, '--logs', sandbox.logs, '--error-document', `200=${join(sandbox.dir, 'x')}`]);
      expect(result.status).to.equal(2);
      expect(result.stderr).to.contain('CODE one of 404, 500, 502, 503, 504');
    });
  });

  describe('extqs check', function () {
    const check = (args: string[] = []) => extqs(['check', '--www', sandbox.www, '--logs', sandbox.logs, ...args]);

    it('prints what would run and exits 0 on the default install (no controllers)', function () {
      const result = check(['--workers', '3', '--port', '8081']);
      expect(result.status, result.stdout).to.equal(0);
      expect(result.stdout).to.contain('proxy: http://0.0.0.0:8081');
      expect(result.stdout).to.contain('host: 3 workers');
      expect(result.stdout).to.contain('controllers: none');
      expect(result.stdout.trim().split('\n').at(-1)).to.equal('check: no problem found');
    });

    it('loads every controller and names each problem, exit 1', function () {
      writeFileSync(join(sandbox.controllers, 'Good.ts'), 'export default () => ({ ok: true });\n');
      writeFileSync(join(sandbox.controllers, 'Broken.ts'), 'export default () => {\n  return {;\n};\n');
      writeFileSync(join(sandbox.controllers, 'NoDefault.js'), 'exports.x = 1;\n');
      writeFileSync(join(sandbox.controllers, 'bad-name.ts'), 'export default () => 1;\n');
      const result = check();
      expect(result.status).to.equal(1);
      expect(result.stdout).to.contain(`controller ${join(sandbox.controllers, 'Good.ts')}: ok`);
      expect(result.stdout).to.match(
        new RegExp(`controller ${join(sandbox.controllers, 'Broken.ts')}: Parse error in controller script .*Broken\\.ts:2:\\d+`),
      );
      expect(result.stdout).to.contain(
        `controller ${join(sandbox.controllers, 'NoDefault.js')}: Controller script ${join(sandbox.controllers, 'NoDefault.js')} has no default export function`,
      );
      expect(result.stdout).to.contain('bad-name.ts: never served: "bad-name" is not a controller name');
      expect(result.stdout.trim().split('\n').at(-1)).to.equal('check: 3 problems found');
    });

    it('says whether the slowlog is on, and after how long', function () {
      expect(check().stdout).to.contain('slowlog: off\n');
      expect(check(['--slowlog-timeout', '2']).stdout).to.contain(
        'slowlog: a controller call running past 2 s gets its stack in host.log\n',
      );
    });

    describe('when controllers have type errors', function () {
      it('names each as file:line:column and the message, in controllers and their helpers, exit 1', function () {
        writeFileSync(
          join(sandbox.controllers, 'Bad.ts'),
          "import type { Controller } from 'extqs';\n\nconst n: number = 'x';\nconst Bad: Controller = () => ({ n });\nexport default Bad;\n",
        );
        // A helper folder (not a route) is checked even before a controller imports it; a hostile name included.
        mkdirSync(join(sandbox.controllers, '_my helpers'));
        writeFileSync(join(sandbox.controllers, '_my helpers', 'ünits.ts'), 'export const celsius: string = 21.5;\n');
        // JavaScript is checked only when it asks to be, as tsc does.
        writeFileSync(join(sandbox.controllers, 'Plain.js'), 'const x = 1;\nmodule.exports = () => x.not.there;\n');
        writeFileSync(
          join(sandbox.controllers, 'Checked.js'),
          "// @ts-check\n/** @type {number} */\nconst x = 'one';\nmodule.exports = () => x;\n",
        );
        const result = check();
        expect(result.status, result.stdout).to.equal(1);
        expect(result.stdout).to.contain(`controller ${join(sandbox.controllers, 'Bad.ts')}: loads; 1 type error, below`);
        expect(result.stdout).to.contain(`controller ${join(sandbox.controllers, 'Plain.js')}: ok`);
        expect(result.stdout).to.contain(`types: TypeScript 5.9.3, options of ${join(ROOT, 'tsconfig.controllers.json')}: 3 errors`);
        const lines = result.stdout.split('\n');
        expect(lines).to.include(`${join(sandbox.controllers, 'Bad.ts')}:3:7 Type 'string' is not assignable to type 'number'.`);
        expect(lines).to.include(`${join(sandbox.controllers, 'Checked.js')}:3:7 Type 'string' is not assignable to type 'number'.`);
        expect(lines).to.include(
          `${join(sandbox.controllers, '_my helpers', 'ünits.ts')}:1:14 Type 'number' is not assignable to type 'string'.`,
        );
        expect(result.stdout.trim().split('\n').at(-1)).to.equal('check: 3 problems found');
      });

      it("uses www/tsconfig.json's options when the www has one", function () {
        writeFileSync(
          join(sandbox.www, 'tsconfig.json'),
          JSON.stringify({ extends: join(ROOT, 'tsconfig.controllers.json'), compilerOptions: { noUnusedLocals: true } }),
        );
        writeFileSync(join(sandbox.controllers, 'Unused.ts'), 'const unused = 1;\nexport default () => "ok";\n');
        const result = check();
        expect(result.status, result.stdout).to.equal(1);
        expect(result.stdout).to.contain(`options of ${join(sandbox.www, 'tsconfig.json')}: 1 error`);
        expect(result.stdout.split('\n')).to.include(
          `${join(sandbox.controllers, 'Unused.ts')}:1:7 'unused' is declared but its value is never read.`,
        );
      });
    });

    it('type-checks a controller written against the extqs types and finds nothing, exit 0', function () {
      writeFileSync(
        join(sandbox.controllers, 'Typed.ts'),
        [
          "import { readFileSync } from 'node:fs';",
          "import type { Controller, ControllerContext, ControllerResult } from 'extqs';",
          '',
          "const greeting = readFileSync(__filename, 'utf8').length > 0 ? 'hello' : '';",
          'async function answer({ query, pathInfo, signal }: ControllerContext): Promise<ControllerResult> {',
          '  if (signal.aborted) return new Response(null, { status: 499 });',
          "  return typeof query.name === 'string' ? { greeting, name: query.name, pathInfo } : Response.json({ error: 'name?' }, { status: 400 });",
          '}',
          'const Typed: Controller = answer;',
          'export default Typed;',
          '',
        ].join('\n'),
      );
      const result = check();
      expect(result.status, result.stdout).to.equal(0);
      expect(result.stdout).to.contain(`controller ${join(sandbox.controllers, 'Typed.ts')}: ok`);
      expect(result.stdout).to.contain(`types: TypeScript 5.9.3, options of ${join(ROOT, 'tsconfig.controllers.json')}: no error`);
      expect(result.stdout.trim().split('\n').at(-1)).to.equal('check: no problem found');
    });

    it('reports every bad setting at once, exit 2', function () {
      const result = check(['--port', '80a', '--workers', '0']);
      expect(result.status).to.equal(2);
      expect(result.stderr).to.contain('--port (EXTQS_PORT) must be an integer from 0 to 65535, got "80a"');
      expect(result.stderr).to.contain('--workers (EXTQS_WORKERS) must be an integer from 1 to 256, got "0"');
    });
  });

  describe('SIGHUP', function () {
    let running: Running | undefined;
    afterEach(async () => running?.stop());

    it('makes extqs proxy on its own read its settings again: the log level applied, the rest named', async function () {
      const file = join(sandbox.dir, 'proxy.conf');
      writeFileSync(file, 'LOG_LEVEL=warn\nWORKERS=3\n');
      // One process: it applies a client limit itself (with two, new workers would); what it reads at start needs a restart.
      running = await startProxy(sandbox, [
        '--upstream',
        `unix:${join(sandbox.dir, 'none.sock')}`,
        '--proxy-workers',
        '1',
        '--config',
        file,
      ]);
      // A missing file is an info line (AH00128): not written at warn, written at info.
      const idOfMiss = async () => (await get(running!.url, '/no-such-file.txt')).headers['x-request-id'] as string;
      const beforeId = await idOfMiss();
      writeFileSync(file, 'LOG_LEVEL=info\nWORKERS=4\nKEEP_ALIVE_TIMEOUT=2\nEXTQS_FOLLOW_SYMLINKS=off\n');
      running.child.kill('SIGHUP');
      const line = await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.includes('SIGHUP received')),
        5000,
        'the reload line',
      );
      expect(line).to.contain('[mpm_event:notice]');
      expect(line).to.contain(
        'SIGHUP received: reopened access.log, error.log; applied --log-level "warn" -> "info", --keep-alive-timeout 5 -> 2; ' +
          'need a restart to apply: --follow-symlinks "owner" -> "off"',
      );
      const afterId = await idOfMiss();
      await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes(afterId)), 3000, 'the info line of a miss after SIGHUP');
      // A worker sends a turn's lines at once, long before the reload line: the earlier miss's would be here.
      expect(readLog(sandbox, 'error.log').filter((l) => l.includes(beforeId))).to.deep.equal([]);
    });

    it("makes a launcher's child sent SIGHUP directly reopen its logs and keep the launcher's settings", async function () {
      running = await startStack(sandbox, ['--workers', '1']);
      const children = readFileSync(`/proc/${running.child.pid}/task/${running.child.pid}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .map(Number);
      const proxyPid = children.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('proxy'))!;
      process.kill(proxyPid, 'SIGHUP');
      const line = await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.includes('SIGHUP received')),
        5000,
        'the reload line',
      );
      expect(line).to.contain(
        `[pid ${proxyPid}] SIGHUP received: reopened access.log, error.log; settings unchanged: they come from the launcher`,
      );
    });
  });

  describe('in production', function () {
    let stack: Running | undefined;
    afterEach(async () => stack?.stop());

    it('runs the compiled JavaScript in build/, with no TypeScript loader, in every process', async function () {
      stack = await startStack(sandbox, ['--workers', '2', '--proxy-workers', '2']);
      const processes = [stack.child.pid!, ...descendants(stack.child.pid!)];
      expect(processes).to.have.length(7); // launcher, proxy primary, two proxy workers, host primary, two host workers
      for (const pid of processes) {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
        expect(cmdline.join(' '), `pid ${pid}`).not.to.match(/tsx/);
        const script = resolve(
          ROOT,
          cmdline.find((word) => word.endsWith('.js'))!,
        );
        expect(script === join(ROOT, 'bin/extqs.js') || script.startsWith(join(ROOT, 'build/')), cmdline.join(' ')).to.equal(true);
        expect(readlinkSync(`/proc/${pid}/exe`)).to.equal(process.execPath);
      }
    });

    it('never loads the TypeScript compiler in extqs start, even serving a TypeScript controller (only check does)', async function () {
      this.timeout(40_000); // a check and a start, each process writing every module it loads
      // NODE_DEBUG=module makes Node's CommonJS loader, which loads the compiler, name every file it loads on
      // stderr; every process of the stack inherits it and writes to the launcher's stderr.
      const compiler = join(ROOT, 'node_modules', 'typescript', 'lib', 'typescript.js');
      writeFileSync(
        join(sandbox.controllers, 'Typed.ts'),
        "import type { Controller } from 'extqs';\nconst Typed: Controller = () => 'typed';\nexport default Typed;\n",
      );
      const checked = extqs(['check', '--www', sandbox.www, '--logs', sandbox.logs], { NODE_DEBUG: 'module' });
      expect(checked.status, checked.stdout).to.equal(0);
      expect(checked.stderr, 'extqs check loads the compiler: the probe sees it').to.contain(`load "${compiler}"`);

      // One host worker and no proxy workers: each process prints hundreds of lines, and one of each role is the proof.
      const args = ['start', '--port', '0', '--listen', '127.0.0.1', '--www', sandbox.www, '--logs', sandbox.logs];
      stack = await spawnReady(['bin/extqs.js', ...args, '--workers', '1', '--proxy-workers', '1'], { NODE_DEBUG: 'module' });
      expect((await get(stack.url, '/External/Typed')).body).to.equal('typed');
      await stack.stop();
      expect(stack.stderr()).to.contain('load "'); // the probe was on in the stack too
      expect(stack.stderr()).not.to.contain(compiler);
    });
  });
});
