// A controller that kills its own worker beside requests the host primary relays (a host on TCP, or
// --worker-concurrency, where the proxy sends everything through the primary): the relay sends each neighbour GET
// on the dead worker once more, to another worker, and never the request that killed it (host/pool/dispatcher.ts,
// common/workerLoss.ts; docs/design.md §6.4).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readHostEvents, startStack, startTcpHostStack, type Running, type Sandbox } from '../helpers/stack.ts';

const stacks: { name: string; start: (sandbox: Sandbox) => Promise<Running[]> }[] = [
  {
    name: 'a host on TCP',
    start: startTcpHostStack,
  },
  {
    name: 'a host on a unix socket with --worker-concurrency 8',
    start: async (sandbox) => [await startStack(sandbox, ['--workers', '2', '--worker-concurrency', '8'])],
  },
];

for (const { name, start } of stacks) {
  describe(`a controller that kills its worker beside relayed GETs, ${name}`, function () {
    let sandbox: Sandbox;
    let running: Running[] = [];

    before(async function () {
      sandbox = makeSandbox();
      writeFileSync(
        join(sandbox.controllers, 'Killer.ts'),
        "export default () => { process.kill(process.pid, 'SIGKILL'); return 'not killed'; };\n",
      );
      // In flight on both workers when the killer runs: its answer is checked byte for byte.
      writeFileSync(
        join(sandbox.controllers, 'Neighbour.ts'),
        'export default async ({ query }: { query: Record<string, unknown> }) => { await new Promise((r) => setTimeout(r, 300)); return `neighbour ${String(query.n)}`; };\n',
      );
      running = await start(sandbox);
    });

    after(async function () {
      for (const each of running) await each.stop();
      sandbox?.remove();
    });

    const deathLines = () => readHostEvents(sandbox).filter((e) => / Worker \d+ exited with /.test(e));

    it('answers every neighbour, sends the killer nowhere again, and costs one worker a kill', async function () {
      // Two rounds: a third death of the same controller within 10 s would quarantine it.
      for (let round = 1; round <= 2; round++) {
        const neighbours = Array.from({ length: 12 }, (_, i) => get(running[0].url, `/External/Neighbour?n=${round}-${i}`));
        // The neighbours reach both workers before the kill.
        await new Promise((resolve) => setTimeout(resolve, 50));
        const killed = await get(running[0].url, `/External/Killer?round=${round}`);
        const answers = await Promise.all(neighbours);
        expect(answers.map((a) => `${a.status} ${a.body}`)).to.deep.equal(answers.map((_, i) => `200 neighbour ${round}-${i}`));
        expect(killed.status).to.be.within(500, 599);
        const id = killed.headers['x-request-id'] as string;
        const line = await eventually(() => deathLines().find((e) => e.includes(`[req ${id}]`)), 5000, 'the death line');
        expect(line).to.match(
          /Cause: process\.kill\(process\.pid, "SIGKILL"\) called by controller Killer, in request [^ ]+, which is not sent again\./,
        );
        // A replacement listens before the next round; sent again, the killer would have killed it too.
        await eventually(
          async () => ((await get(running[0].url, `/External/Neighbour?n=after-${round}`)).status === 200 ? true : undefined),
          5000,
          'a neighbour',
        );
        expect(deathLines(), deathLines().join('\n')).to.have.length(round);
      }
      // The relay said what it did with the dead worker's GETs.
      expect(deathLines().join('\n')).to.match(/sent again/);
    });
  });
}
