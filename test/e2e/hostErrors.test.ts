// A host's error answers that no controller made never reach a client: the proxy answers Apache's page for
// their status and logs P6 (docs/design.md §5). The host here stands for one whose framework answered
// itself (fastify's JSON 404 and 431); a controller's own error answer, marked so, passes as it is. And the
// real host takes every field of a head the proxy let through.
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { CONTROLLER_ANSWER_FIELD } from '../../common/protocol.ts';
import { FORWARDERS } from '../../common/settings.ts';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, startProxy, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** What fastify answers for a route it does not know, and for a head past its limit. */
const FRAMEWORK_ANSWERS: Record<string, [number, string]> = {
  '/External/NotFound': [404, '{"message":"Route GET:/External/NotFound not found","error":"Not Found","statusCode":404}'],
  '/External/TooBig': [
    431,
    '{"error":"Request Header Fields Too Large","message":"Exceeded maximum allowed HTTP header size","statusCode":431}',
  ],
};

describe("a host's own error answers", function () {
  let host: Server;
  let hostUrl: string;

  before(async function () {
    host = createServer((req, res) => {
      const framework = FRAMEWORK_ANSWERS[req.url ?? ''];
      if (framework) {
        res.writeHead(framework[0], { 'content-type': 'application/json' });
        res.end(framework[1]);
        return;
      }
      // A controller's own 404, as the host marks it.
      res.writeHead(404, { 'content-type': 'text/plain', [CONTROLLER_ANSWER_FIELD]: '1' });
      res.end('no such reading');
    });
    host.listen(0, '127.0.0.1');
    await once(host, 'listening');
    hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
  });

  after(async function () {
    host.closeAllConnections();
    host.close();
    await once(host, 'close');
  });

  for (const forwarder of FORWARDERS) {
    describe(`through ${forwarder}`, function () {
      let sandbox: Sandbox;
      let proxy: Running;

      before(async function () {
        sandbox = makeSandbox();
        proxy = await startProxy(sandbox, ['--upstream', hostUrl, '--forwarder', forwarder, '--proxy-workers', '1']);
      });

      after(async function () {
        await proxy?.stop();
        sandbox?.remove();
      });

      for (const [path, [status]] of Object.entries(FRAMEWORK_ANSWERS)) {
        it(`answers the host's JSON ${status} with Apache's ${status} page, and logs P6`, async function () {
          const reply = await get(proxy.url, path);
          expect(reply.status).to.equal(status);
          expect(reply.headers['content-type']).to.equal('text/html; charset=iso-8859-1');
          expect(reply.body).to.contain(`<title>${status} `);
          expect(reply.body).not.to.contain('statusCode');
          const id = String(reply.headers['x-request-id']);
          const line = await eventually(() => readLog(sandbox, 'error.log').find((l) => l.endsWith(`request_id: ${id}`)));
          expect(line).to.match(
            new RegExp(`\\[proxy:error\\] .*\\[client 127\\.0\\.0\\.1:\\d+\\] host answered ${status} without a controller for ${path},`),
          );
          const access = await eventually(() => readLog(sandbox, 'access.log').find((l) => l.includes(`"GET ${path} HTTP/1.1"`)));
          expect(access).to.contain(`" ${status} ${Buffer.byteLength(reply.body)} `);
        });
      }

      it("passes a controller's own error answer on as it is, without the host's mark", async function () {
        const reply = await get(proxy.url, '/External/Latest');
        expect([reply.status, reply.body]).to.deep.equal([404, 'no such reading']);
        expect(reply.headers).not.to.have.property(CONTROLLER_ANSWER_FIELD);
      });
    });
  }
});

describe('the host and the proxy agree on the request head', function () {
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(
      join(sandbox.controllers, 'Fields.ts'),
      `export default ({ headers }) => ({ count: Object.keys(headers).length, last: headers['x-2499'] });\n`,
    );
    stack = await startStack(sandbox, ['--max-header-fields', '3000', '--max-header-size', '65536']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('gives the controller every field the proxy let through, past the 2,000 Node keeps by default', async function () {
    const headers = Object.fromEntries(Array.from({ length: 2500 }, (_, i) => [`x-${i}`, 'v']));
    const reply = await get(stack.url, '/External/Fields', { headers });
    expect(reply.status).to.equal(200);
    const seen = JSON.parse(reply.body) as { count: number; last?: string };
    expect(seen.last).to.equal('v');
    expect(seen.count).to.be.at.least(2500);
  });
});
