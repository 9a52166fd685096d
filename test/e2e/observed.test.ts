// The default install reproduces the observed deployment (docs/design.md §1): both controllers missing,
// no favicon. Driven through the real launcher; logs are read after a stop, when they are drained.
import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import { get, type Reply } from '../helpers/http.ts';
import { makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';
import { requireTool } from '../helpers/tools.ts';

const OBSERVED = [
  '/External/Latest?sn=123&no=1',
  '/External/Latest?sn=123&no=',
  '/External/Latest?sn=987654&no=42',
  '/External/Alarm?all_alarm&all',
];
const COMBINED = /^(\S+) - - \[\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "([^"]*)" (\d{3}) (\d+|-) "([^"]*)" "([^"]*)"$/;

describe('the default install (no controllers, no favicon)', function () {
  let sandbox: Sandbox;
  let stack: Running;
  const replies = new Map<string, Reply[]>();

  before(async function () {
    sandbox = makeSandbox();
    stack = await startStack(sandbox);
    // Every observed request twice, and the favicon twice as browsers do.
    for (const path of [...OBSERVED, '/favicon.ico']) {
      for (let i = 0; i < 2; i++) {
        const reply = await get(stack.url, path, { headers: { 'User-Agent': 'extqs-test/1.0', Referer: 'http://client.example/page' } });
        replies.set(path, [...(replies.get(path) ?? []), reply]);
      }
    }
    expect(await stack.stop()).to.equal(0);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  describe('when a controller script is absent', function () {
    for (const path of OBSERVED) {
      it(`answers ${path} with Apache's 500 page and no application bytes, the same every time`, function () {
        const [first, second] = replies.get(path)!;
        expect(first.status).to.equal(500);
        expect(first.headers['content-type']).to.equal('text/html; charset=iso-8859-1');
        expect(first.body).to.contain('<title>500 Internal Server Error</title>');
        expect(first.body).to.contain('The server encountered an internal error or\nmisconfiguration');
        expect(first.headers['x-request-id']).to.be.a('string');
        expect(second.status).to.equal(500);
        expect(second.body).to.equal(first.body);
      });
    }

    it('logs the load failure to host.log with the path tried, request id, method and URL', function () {
      const hostLines = readLog(sandbox, 'host.log').filter((l) => l.includes('Failed opening controller script'));
      expect(hostLines).to.have.length(OBSERVED.length * 2);
      for (const path of OBSERVED) {
        const name = path.split('?')[0].split('/')[2];
        for (const reply of replies.get(path)!) {
          const line = hostLines.find((l) => l.includes(`[req ${String(reply.headers['x-request-id'])}]`));
          expect(line, `host.log line for ${path}`).to.be.a('string');
          expect(line).to.match(/^\[\d{2}-[A-Z][a-z]{2}-\d{4} \d{2}:\d{2}:\d{2}\.\d{3} UTC\] \[error\] /);
          expect(line).to.contain(`Failed opening controller script ${sandbox.controllers}/${name}.ts: No such file or directory`);
          expect(line).to.contain(`GET ${path}`);
        }
      }
    });

    it('logs the host\'s message as fcgid stderr, then "End of script output before headers", with the client and request id', function () {
      const errorLines = readLog(sandbox, 'error.log');
      for (const path of OBSERVED) {
        for (const reply of replies.get(path)!) {
          const [relayed, line] = errorLines.filter((l) => l.endsWith(`request_id: ${String(reply.headers['x-request-id'])}`));
          // First the host's message as mod_fcgid relays a PHP process's stderr (the legacy recording's line).
          const name = path.split('?')[0].slice('/External/'.length);
          expect(relayed).to.match(/\] \[fcgid:warn\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] mod_fcgid: stderr: /);
          expect(relayed).to.contain(
            `mod_fcgid: stderr: PHP Fatal error:  Failed opening controller script ${sandbox.controllers}/${name}.ts: No such file or directory`,
          );
          expect(line, `error.log line for ${path}`).to.be.a('string');
          expect(line).to.match(/^\[[A-Z][a-z]{2} [A-Z][a-z]{2} \d{2} \d{2}:\d{2}:\d{2}\.\d{6} \d{4}\] \[core:error\] \[pid \d+\] /);
          expect(line).to.contain('[client 127.0.0.1:');
          expect(line).to.contain(`End of script output before headers: ${path.split('?')[0]}`);
          expect(line).not.to.contain('ECONNRESET');
        }
      }
    });
  });

  describe('when a static file is absent (the favicon)', function () {
    it("answers 404 with Apache's page", function () {
      for (const reply of replies.get('/favicon.ico')!) {
        expect(reply.status).to.equal(404);
        expect(reply.body).to.contain('<title>404 Not Found</title>');
        expect(reply.body).to.contain('The requested URL was not found on this server.');
      }
    });

    it('logs the Windows file-open failure with the absolute path and the client to error.log', function () {
      const lines = readLog(sandbox, 'error.log').filter((l) => l.includes('File does not exist'));
      expect(lines).to.have.length(2);
      for (const line of lines) {
        expect(line).to.match(
          /\[core:info\] \[pid \d+\] \(OS 2\)The system cannot find the file specified\. {2}: \[client 127\.0\.0\.1:\d+\] AH00128: File does not exist: /,
        );
        expect(line).to.contain(`File does not exist: ${sandbox.publicDir}/favicon.ico`);
      }
    });
  });

  describe('for any request', function () {
    it('writes exactly one Apache combined line to access.log', function () {
      const lines = readLog(sandbox, 'access.log');
      expect(lines).to.have.length((OBSERVED.length + 1) * 2);
      for (const line of lines) expect(line).to.match(COMBINED);
      const first = COMBINED.exec(lines[0])!;
      expect(first.slice(1)).to.deep.equal([
        '127.0.0.1',
        `GET ${OBSERVED[0]} HTTP/1.1`,
        '500',
        first[4],
        'http://client.example/page',
        'extqs-test/1.0',
      ]);
      expect(Number(first[4])).to.equal(Buffer.byteLength(replies.get(OBSERVED[0])![0].body));
      const favicon = lines.map((l) => COMBINED.exec(l)!).filter((m) => m[2] === 'GET /favicon.ico HTTP/1.1');
      expect(favicon.map((m) => m[3])).to.deep.equal(['404', '404']);
    });

    it('writes lines GoAccess parses with --log-format=COMBINED', function () {
      const goaccess = requireTool(this, 'goaccess');
      const report = JSON.parse(
        execFileSync(goaccess, [`${sandbox.logs}/access.log`, '--log-format=COMBINED', '--output=json', '--no-global-config'], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        }),
      );
      expect(report.general.failed_requests).to.equal(0);
      expect(report.general.valid_requests).to.equal((OBSERVED.length + 1) * 2);
    });
  });
});
