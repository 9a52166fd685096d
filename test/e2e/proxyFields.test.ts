// A controller sees the client's fields and the proxy's HTTP ones, never the proxy's signals to the host (the
// start-by time, `extqs dev`'s local-client mark), as a PHP script sees no FastCGI param that is not HTTP_*; and a
// client's own copy of such a field is not believed.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { makeSandbox, spawnReady, startStack, startTcpHostStack, type Running, type Sandbox } from '../helpers/stack.ts';

const ECHO_HEADERS = 'export default ({ headers }: { headers: Record<string, unknown> }) => ({ headers });\n';

/** A start-by time long past: a worker that believed it would start nothing. */
const CLIENT_FIELDS = { 'x-extqs-start-by': '1', 'x-extqs-local-client': '1', 'x-client-own': 'kept' };

const stacks: { name: string; start: (sandbox: Sandbox) => Promise<Running[]> }[] = [
  { name: 'straight to the workers (npm start)', start: async (sandbox) => [await startStack(sandbox, ['--workers', '2'])] },
  {
    name: "through the primary's relay (a host on TCP)",
    start: startTcpHostStack,
  },
  {
    name: 'under extqs dev, to a loopback client',
    start: async (sandbox) => [
      await spawnReady(['bin/extqs.js', 'dev', '--port', '0', '--listen', '127.0.0.1', '--www', sandbox.www, '--logs', sandbox.logs]),
    ],
  },
];

for (const { name, start } of stacks) {
  describe(`the fields a controller sees, ${name}`, function () {
    let sandbox: Sandbox;
    let running: Running[] = [];

    before(async function () {
      sandbox = makeSandbox();
      writeFileSync(join(sandbox.controllers, 'EchoHeaders.ts'), ECHO_HEADERS);
      running = await start(sandbox);
    });

    after(async function () {
      for (const each of running) await each.stop();
      sandbox?.remove();
    });

    /** The names of the fields the controller saw, over several requests so that each worker answers. */
    async function seenNames(headers: Record<string, string> = {}): Promise<string[]> {
      const names = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const reply = await get(running[0].url, `/External/EchoHeaders?i=${i}`, { headers });
        expect(reply.status, reply.body).to.equal(200);
        for (const field of Object.keys((JSON.parse(reply.body) as { headers: object }).headers)) names.add(field);
      }
      return [...names];
    }

    it('shows no x-extqs- field the proxy added', async function () {
      const names = await seenNames();
      expect(names).to.include('x-request-id');
      expect(names.filter((field) => field.startsWith('x-extqs-'))).to.deep.equal([]);
    });

    it("drops a client's start-by and local-client fields: the request runs, and the controller sees neither", async function () {
      const names = await seenNames(CLIENT_FIELDS);
      expect(names).to.include('x-client-own');
      expect(names.filter((field) => field.startsWith('x-extqs-'))).to.deep.equal([]);
    });
  });
}
