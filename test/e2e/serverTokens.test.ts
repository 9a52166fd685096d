// The Server field of every kind of answer in each --server-tokens mode, and a bad mode refused at start
// (docs/operations.md, "What each request gets").
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { VERSION } from '../../common/version.ts';
import { get, rawAnswer } from '../helpers/http.ts';
import { makeSandbox, ROOT, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

describe('the Server field (--server-tokens)', function () {
  for (const [tokens, expected] of [
    ['full', `extqs/${VERSION} (Node.js ${process.version})`],
    ['prod', 'extqs'],
    ['off', undefined],
  ] as const) {
    describe(`--server-tokens ${tokens}`, function () {
      let sandbox: Sandbox;
      let stack: Running;

      before(async function () {
        sandbox = makeSandbox();
        writeFileSync(join(sandbox.publicDir, 'a.txt'), 'file a\n');
        // A controller's own Server field is replaced, as Apache replaces a CGI script's.
        writeFileSync(
          join(sandbox.controllers, 'Hello.ts'),
          `export default () => new Response('hi', { headers: { Server: 'controller/1' } });\n`,
        );
        stack = await startStack(sandbox, ['--workers', '1', '--server-tokens', tokens]);
      });

      after(async function () {
        await stack?.stop();
        sandbox?.remove();
      });

      for (const [what, path, status] of [
        ['a static file', '/a.txt', 200],
        ['a forwarded answer', '/External/Hello', 200],
        ['an error page', '/missing.txt', 404],
        ['a controller error page', '/External/Latest', 500],
        ['the status page', '/server-status?auto', 200],
      ] as const) {
        it(`says ${expected === undefined ? 'no Server' : `Server: ${expected}`} on ${what}`, async function () {
          const reply = await get(stack.url, path);
          expect(reply.status).to.equal(status);
          expect(reply.headers.server).to.equal(expected);
        });
      }

      it(`says ${expected === undefined ? 'no Server' : `Server: ${expected}`} on a request Node's parser refuses`, async function () {
        const answer = await rawAnswer(stack.url, 'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
        expect(answer).to.match(/^HTTP\/1\.1 400 /);
        const head = answer.split('\r\n\r\n', 1)[0].split('\r\n');
        expect(head.find((l) => l.toLowerCase().startsWith('server:'))).to.equal(
          expected === undefined ? undefined : `Server: ${expected}`,
        );
      });
    });
  }

  it('refuses a bad value at start, naming it', function () {
    const sandbox = makeSandbox();
    try {
      const run = spawnSync(
        process.execPath,
        ['bin/extqs.js', 'proxy', '--www', sandbox.www, '--logs', sandbox.logs, '--server-tokens', 'minimal'],
        {
          cwd: ROOT,
          encoding: 'utf8',
          timeout: 30_000,
        },
      );
      expect(run.status).to.equal(2);
      expect(run.stderr).to.contain('--server-tokens');
      expect(run.stderr).to.contain('minimal');
      expect(run.stderr).to.contain('one of full, prod, off');
    } finally {
      sandbox.remove();
    }
  });
});
