// Logs an operator can live with: levels, JSON, size rotation, SIGHUP with the real logrotate, and a log
// directory removed while the stack serves. Every stack is the real launcher on port 0.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { get, type Reply } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const run = promisify(execFile);

/** Lines of `name` and its rotated files (`name.1`, `name.2`, …), oldest first. */
function linesAcross(logs: string, name: string): { files: string[]; lines: string[] } {
  const number = (f: string) => (f === name ? 0 : Number(f.slice(name.length + 1)));
  const files = readdirSync(logs)
    .filter((f) => f === name || (/^\d+$/.test(f.slice(name.length + 1)) && f.startsWith(`${name}.`)))
    .sort((a, b) => number(b) - number(a));
  return { files, lines: files.flatMap((f) => readFileSync(join(logs, f), 'utf8').split('\n').filter(Boolean)) };
}

const count = (lines: string[], text: string) => lines.filter((l) => l.includes(text)).length;

describe('logs', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let stack: Running | undefined;

  beforeEach(() => (sandbox = makeSandbox()));
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
    sandbox.remove();
  });

  describe('levels', function () {
    it('writes the favicon miss ([core:info]) at the default level', async function () {
      stack = await startStack(sandbox, ['--workers', '1']);
      expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
      expect(await stack.stop()).to.equal(0);
      expect(count(readLog(sandbox, 'error.log'), '[core:info]')).to.equal(1);
    });

    it('drops error.log and host.log lines below --log-level, never access.log lines, and applies a new level on SIGHUP', async function () {
      const conf = join(sandbox.dir, 'extqs.conf');
      writeFileSync(conf, 'LOG_LEVEL=warn\nWORKERS=1\n');
      stack = await startStack(sandbox, ['--config', conf]);
      expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
      expect((await get(stack.url, '/External/Latest?sn=1&no=')).status).to.equal(500);
      await eventually(
        () => (count(readLog(sandbox, 'host.log'), 'Failed opening controller script') === 1 ? true : undefined),
        5000,
        'the host error line',
      );
      await eventually(() => (count(readLog(sandbox, 'error.log'), '[core:error]') === 1 ? true : undefined), 5000, 'the proxy error line');
      // An access line is written when its response has closed, a moment after the client has it.
      await eventually(() => (readLog(sandbox, 'access.log').length === 2 ? true : undefined), 5000, 'both access lines');
      expect(count(readLog(sandbox, 'error.log'), '[core:info]')).to.equal(0);
      expect(count(readLog(sandbox, 'host.log'), '[info]')).to.equal(0);
      // Apache writes notice lines to a file log whatever the level: start-up is one.
      expect(count(readLog(sandbox, 'error.log'), 'resuming normal operations')).to.equal(1);
      expect(readLog(sandbox, 'host.log').filter((l) => l.includes('[notice]') && /Host pool \d+ serving/.test(l))).to.have.length(1);

      // The file changes; SIGHUP to the launcher applies the level and names what needs a restart.
      writeFileSync(conf, 'LOG_LEVEL=info\nWORKERS=1\nEXTQS_PM=ondemand\n');
      stack.child.kill('SIGHUP');
      const reloaded = await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.includes('SIGHUP received')),
        5000,
        'the reload line',
      );
      expect(reloaded).to.contain('[mpm_event:notice]');
      expect(reloaded).to.contain('applied --log-level "warn" -> "info"; need a restart to apply: --pm "static" -> "ondemand"');
      await eventually(
        () =>
          readLog(sandbox, 'host.log').find(
            (l) => l.includes('[notice]') && l.includes('SIGHUP received: reopened host.log; applied --log-level'),
          ),
        5000,
        'the host reload line',
      );
      await eventually(
        () => (stack!.stderr().includes('SIGHUP: the children reopen their logs; applied --log-level "warn" -> "info"') ? true : undefined),
        5000,
        `the launcher's SIGHUP line; stderr: ${stack.stderr()}`,
      );
      expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
      await eventually(
        () => (count(readLog(sandbox, 'error.log'), '[core:info]') === 1 ? true : undefined),
        5000,
        'the favicon line after the reload',
      );
    });

    it('writes the SIGHUP lines even at --log-level error (notice lines always show, as in Apache)', async function () {
      stack = await startStack(sandbox, ['--workers', '1', '--log-level', 'error']);
      stack.child.kill('SIGHUP');
      const proxyLine = await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.includes('SIGHUP received')),
        5000,
        'the proxy reload line',
      );
      expect(proxyLine).to.contain('[mpm_event:notice]');
      await eventually(
        () => readLog(sandbox, 'host.log').find((l) => l.includes('[notice]') && l.includes('SIGHUP received: reopened host.log')),
        5000,
        'the host reload line',
      );
    });

    it('keeps the running settings when the file read again on SIGHUP is bad, and says why', async function () {
      const conf = join(sandbox.dir, 'extqs.conf');
      writeFileSync(conf, 'LOG_LEVEL=info\nWORKERS=1\n');
      stack = await startStack(sandbox, ['--config', conf]);
      writeFileSync(conf, 'LOG_LEVEL=loud\n');
      stack.child.kill('SIGHUP');
      const line = await eventually(
        () => readLog(sandbox, 'error.log').find((l) => l.includes('SIGHUP received')),
        5000,
        'the reload line',
      );
      expect(line).to.contain('[mpm_event:error]');
      expect(line).to.contain('configuration not read again, the running one is kept: --log-level (EXTQS_LOG_LEVEL) must be one of');
      expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
      await eventually(() => (count(readLog(sandbox, 'error.log'), '[core:info]') === 1 ? true : undefined), 5000, 'the favicon line');
    });
  });

  describe('--log-format json', function () {
    it('writes each of the three logs as one JSON object a line with the documented fields', async function () {
      stack = await startStack(sandbox, ['--workers', '1', '--log-format', 'json']);
      const favicon = await get(stack.url, '/favicon.ico', { headers: { 'User-Agent': 'ua "quoted"\\', Referer: 'http://r.example/' } });
      const latest = await get(stack.url, '/External/Latest?sn=1&no=');
      expect(await stack.stop()).to.equal(0);

      const parse = (file: 'access.log' | 'error.log' | 'host.log') =>
        readLog(sandbox, file).map((l) => JSON.parse(l) as Record<string, unknown>);
      const access = parse('access.log');
      expect(access).to.have.length(2);
      expect(access[0]).to.deep.include({
        client: '127.0.0.1',
        method: 'GET',
        url: '/favicon.ico',
        protocol: 'HTTP/1.1',
        status: 404,
        referer: 'http://r.example/',
        user_agent: 'ua "quoted"\\',
        request_id: favicon.headers['x-request-id'],
      });
      expect(access[0].time).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(access[1]).to.deep.include({ url: '/External/Latest?sn=1&no=', status: 500, request_id: latest.headers['x-request-id'] });
      for (const entry of access)
        expect(Object.keys(entry)).to.deep.equal([
          'time',
          'client',
          'method',
          'url',
          'protocol',
          'status',
          'bytes',
          'referer',
          'user_agent',
          'request_id',
        ]);

      const errors = parse('error.log');
      const miss = errors.find((e) => e.request_id === favicon.headers['x-request-id'])!;
      expect(miss).to.deep.include({ level: 'info', module: 'core', referer: 'http://r.example/' });
      expect(miss.status).to.match(/^\(OS 2\)The system cannot find the file specified\./);
      expect(miss.message).to.contain('File does not exist:');
      expect(miss.time).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
      expect(
        errors.every(
          (e) => typeof e.pid === 'number' && Object.keys(e).join() === 'time,level,module,pid,client,status,message,referer,request_id',
        ),
      ).to.equal(true);

      const host = parse('host.log');
      const failed = host.find((e) => e.request_id === latest.headers['x-request-id'])!;
      expect(failed).to.deep.include({ level: 'error' });
      expect(failed.message).to.contain('Failed opening controller script');
      expect(host.every((e) => Object.keys(e).join() === 'time,level,pid,request_id,message')).to.equal(true);
    });
  });

  describe('--log-format with an Apache LogFormat string', function () {
    it('writes access.log in that layout, with the request time (%D, %T) and request headers (%{X}i); the other logs stay text', async function () {
      const format = '%h %t "%r" %>s %b %D %T "%{User-Agent}i" %{X-Client-Tag}i %{Absent}i';
      stack = await startStack(sandbox, ['--workers', '1', '--log-format', format]);
      const headers = { 'User-Agent': 'agent "quoted"', 'X-Client-Tag': 'tag-1' };
      expect((await get(stack.url, '/no-such-file.txt', { headers })).status).to.equal(404);
      expect(await stack.stop()).to.equal(0);
      const [line] = readLog(sandbox, 'access.log');
      const match = /^127\.0\.0\.1 \[[^\]]+\] "GET \/no-such-file\.txt HTTP\/1\.1" 404 \d+ (\d+) (\d+) "agent \\"quoted\\"" tag-1 -$/.exec(
        line,
      );
      expect(match, line).not.to.equal(null);
      expect(Number(match![1]) % 1000).to.equal(0);
      expect(Number(match![2])).to.equal(Math.floor(Number(match![1]) / 1_000_000));
      expect(readLog(sandbox, 'error.log').every((l) => l.startsWith('['))).to.equal(true);
    });

    it('refuses an unknown directive at start, naming it, exit 2', async function () {
      const result = await run(process.execPath, [
        'bin/extqs.js',
        'check',
        '--www',
        sandbox.www,
        '--logs',
        sandbox.logs,
        '--log-format',
        '%h %Z',
      ]).then(
        () => expect.fail('check accepted %Z'),
        (err: { code: number; stderr: string }) => err,
      );
      expect(result.code).to.equal(2);
      expect(result.stderr).to.contain(
        '--log-format (EXTQS_LOG_FORMAT) must be one of combined, json, or an Apache LogFormat string: %Z is not one of %h',
      );
    });
  });

  describe('--log-max-size', function () {
    it('rotates by size into access.log.1 … and loses no line', async function () {
      stack = await startStack(sandbox, ['--workers', '1', '--log-max-size', '2k', '--log-max-files', '100']);
      const total = 240;
      for (let i = 0; i < total; i += 8) {
        const replies = await Promise.all(
          Array.from({ length: 8 }, (_, k) => get(stack!.url, k % 2 ? `/favicon.ico?n=${i + k}` : `/External/Latest?sn=${i + k}&no=`)),
        );
        expect(replies.map((r) => r.status).sort()).to.deep.equal([404, 404, 404, 404, 500, 500, 500, 500]);
      }
      expect(await stack.stop()).to.equal(0);
      const access = linesAcross(sandbox.logs, 'access.log');
      expect(access.files.length).to.be.greaterThan(3);
      expect(access.lines).to.have.length(total);
      const error = linesAcross(sandbox.logs, 'error.log');
      expect(error.files.length).to.be.greaterThan(1);
      expect(count(error.lines, '[core:info]')).to.equal(total / 2);
      expect(count(error.lines, 'End of script output before headers')).to.equal(total / 2);
      expect(count(error.lines, 'mod_fcgid: stderr: PHP Fatal error:  Failed opening controller script')).to.equal(total / 2);
      const host = linesAcross(sandbox.logs, 'host.log');
      expect(host.files.length).to.be.greaterThan(1);
      expect(count(host.lines, 'Failed opening controller script')).to.equal(total / 2);
    });
  });

  describe('SIGHUP and an external logrotate', function () {
    it('has every process write to the new files after logrotate (create mode) and loses no line', async function () {
      stack = await startStack(sandbox, ['--workers', '2']);
      const conf = join(sandbox.dir, 'logrotate.conf');
      writeFileSync(
        conf,
        `${['access.log', 'error.log', 'host.log'].map((f) => join(sandbox.logs, f)).join(' ')} {\n` +
          '  create 0640\n  rotate 3\n  missingok\n  sharedscripts\n' +
          `  postrotate\n    kill -HUP ${stack.child.pid}\n  endscript\n}\n`,
      );
      let sent = 0;
      let latest = 0;
      const request = async (): Promise<Reply> => {
        const n = sent++;
        if (n % 2 === 0) latest++;
        return get(stack!.url, n % 2 === 0 ? `/External/Latest?sn=${n}&no=` : `/favicon.ico?n=${n}`);
      };
      // Traffic from four clients while logrotate runs; bounded in count.
      let rotating = true;
      const client = async () => {
        for (let i = 0; i < 300 && rotating; i++) expect([404, 500]).to.include((await request()).status);
      };
      const clients = Promise.all([client(), client(), client(), client()]);
      await eventually(() => (sent >= 40 ? true : undefined), 10_000, 'traffic before the rotation');
      await run('logrotate', ['-f', '-s', join(sandbox.dir, 'logrotate.state'), conf]);
      // Both children say they reopened, each in its new file.
      await eventually(
        () => (readLog(sandbox, 'error.log').some((l) => l.includes('SIGHUP received: reopened access.log, error.log')) ? true : undefined),
        5000,
        'the proxy reopening',
      );
      await eventually(
        () => (readLog(sandbox, 'host.log').some((l) => l.includes('SIGHUP received: reopened host.log')) ? true : undefined),
        5000,
        'the host reopening',
      );
      rotating = false;
      await clients;
      // After the reopen: these land in the new files only.
      expect((await get(stack.url, '/favicon.ico?after=1')).status).to.equal(404);
      expect((await get(stack.url, '/External/Latest?sn=after&no=')).status).to.equal(500);
      sent += 2;
      latest += 1;
      expect(await stack.stop()).to.equal(0);

      for (const file of ['access.log', 'error.log', 'host.log'])
        expect(existsSync(join(sandbox.logs, `${file}.1`)), `${file}.1`).to.equal(true);
      const access = linesAcross(sandbox.logs, 'access.log');
      expect(access.lines).to.have.length(sent);
      expect(readFileSync(join(sandbox.logs, 'access.log.1'), 'utf8').split('\n').filter(Boolean).length).to.be.greaterThan(20);
      expect(count(readLog(sandbox, 'access.log'), 'after=1')).to.equal(1);
      expect(count(readLog(sandbox, 'access.log'), 'sn=after')).to.equal(1);
      expect(count(readLog(sandbox, 'error.log'), 'End of script output before headers')).to.be.greaterThan(0);
      const error = linesAcross(sandbox.logs, 'error.log');
      expect(count(error.lines, 'End of script output before headers')).to.equal(latest);
      expect(count(error.lines, '[core:info]')).to.equal(sent - latest);
      const host = linesAcross(sandbox.logs, 'host.log');
      expect(count(host.lines, 'Failed opening controller script')).to.equal(latest);
      expect(count(readLog(sandbox, 'host.log'), 'sn=after')).to.equal(1);
    });
  });

  describe('when the log directory is removed while the stack runs', function () {
    it('says so once on stderr, keeps answering, and writes to a recreated directory', async function () {
      stack = await startStack(sandbox, ['--workers', '1']);
      expect((await get(stack.url, '/favicon.ico')).status).to.equal(404);
      await eventually(() => (readLog(sandbox, 'access.log').length === 1 ? true : undefined), 5000, 'the first line');
      rmSync(sandbox.logs, { recursive: true, force: true });
      // Requests are answered all along; the logs come back within the check interval.
      let answered = 0;
      await eventually(
        async () => {
          const replies = await Promise.all([get(stack!.url, '/favicon.ico?gone'), get(stack!.url, '/External/Latest?sn=gone&no=')]);
          expect(replies.map((r) => r.status)).to.deep.equal([404, 500]);
          answered += 2;
          return count(readLog(sandbox, 'access.log'), '?gone') > 0 && count(readLog(sandbox, 'host.log'), 'sn=gone') > 0
            ? true
            : undefined;
        },
        10_000,
        'lines in the recreated log directory',
      );
      expect(answered).to.be.greaterThan(0);
      for (const file of ['access.log', 'error.log', 'host.log']) {
        expect(
          stack.stderr().split(`${join(sandbox.logs, file)} was deleted (log directory removed?); creating it again`).length - 1,
          file,
        ).to.equal(1);
      }
      expect((await get(stack.url, '/favicon.ico?back')).status).to.equal(404);
      expect(await stack.stop()).to.equal(0);
      expect(count(readLog(sandbox, 'access.log'), '?back')).to.equal(1);
    });
  });
});
