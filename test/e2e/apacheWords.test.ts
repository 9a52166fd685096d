// What the legacy Apache said of a file's path and an error page, said the same way: encoded slashes in a
// static path (AH00026), traversal probes (AH10244), a HEAD on an error page (docs/operations.md and docs/logs.md).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get, rawAnswer } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** The error.log lines of one request, once `count` of them are there. */
function linesOf(sandbox: Sandbox, id: string, count: number): Promise<string[]> {
  return eventually(
    () => {
      const lines = readLog(sandbox, 'error.log').filter((l) => l.endsWith(`request_id: ${id}`));
      return lines.length >= count ? lines : undefined;
    },
    5000,
    `${count} error.log lines for ${id}`,
  );
}

describe("Apache's answers and words", function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.publicDir, 'a.txt'), 'file a\n');
    stack = await startStack(sandbox, ['--workers', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  describe('when a static path holds an encoded slash', function () {
    for (const target of ['/plain%2fa.txt', '/plain%2Fa.txt', '/plain%5ca.txt', '/%2fa.txt']) {
      it(`answers 404 with Apache's AH00026 line for ${target}, as AllowEncodedSlashes Off`, async function () {
        const reply = await get(stack.url, target);
        expect(reply.status).to.equal(404);
        expect(reply.body).to.contain('<title>404 Not Found</title>');
        expect(reply.body).not.to.contain('file a');
        const [line] = await linesOf(sandbox, reply.headers['x-request-id'] as string, 1);
        expect(line).to.match(
          new RegExp(
            `\\[core:info\\] \\[pid \\d+\\] \\[client 127\\.0\\.0\\.1:\\d+\\] AH00026: found %2f \\(encoded '/'\\) in URI path \\(${target}\\), returning 404, request_id: `,
          ),
        );
      });
    }

    it('answers a controller name with %2f the same way, never as a controller failure', async function () {
      const reply = await get(stack.url, '/External/a%2fb');
      expect(reply.status).to.equal(404);
      const [line] = await linesOf(sandbox, reply.headers['x-request-id'] as string, 1);
      expect(line).to.contain("AH00026: found %2f (encoded '/') in URI path (/External/a%2fb), returning 404");
      expect(line).not.to.contain('Invalid controller name');
    });
  });

  describe('when a target climbs above the root', function () {
    it('answers 400 and logs AH10244 at error, as Apache does', async function () {
      const answer = await rawAnswer(stack.url, 'GET /../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect(answer).to.match(/^HTTP\/1\.1 400 /);
      const line = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes('AH10244')), 3000, 'the AH10244 line');
      expect(line).to.match(
        /\[core:error\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] AH10244: invalid URI path \(\/\.\.\/etc\/passwd\), request_id: /,
      );
      expect(line).not.to.contain('Invalid request target');
    });
  });

  describe('when HEAD asks for an error page', function () {
    for (const [what, path, status] of [
      ['a missing file', '/nothing.txt', 404],
      ['a missing controller', '/External/Latest', 500],
    ] as const) {
      it(`answers ${status} for ${what} without a body length, as no body follows`, async function () {
        const reply = await get(stack.url, path, { method: 'HEAD' });
        expect(reply.status).to.equal(status);
        expect(reply.headers['content-type']).to.equal('text/html; charset=iso-8859-1');
        expect(reply.headers).not.to.have.property('content-length');
        expect(reply.headers).not.to.have.property('transfer-encoding');
        expect(reply.body).to.equal('');
        // GET still says its length.
        expect((await get(stack.url, path)).headers['content-length']).to.match(/^\d+$/);
      });
    }
  });
});
