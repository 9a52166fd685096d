// A request starts at most once: one sent away from a blocked worker is never started by that worker afterwards
// (docs/design.md §6.3), whether the proxy sends it straight to the workers (a host on a unix
// socket) or through the primary (a host on TCP).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readHostEvents, startStack, startTcpHostStack, type Running, type Sandbox } from '../helpers/stack.ts';

const BUSY = [
  'export default ({ query }: { query: Record<string, unknown> }) => {',
  '  console.log(`started busy ${String(query.n)}`);',
  '  const end = Date.now() + 2000;',
  '  while (Date.now() < end);',
  '  return `busy ${String(query.n)}`;',
  '};',
  '',
].join('\n');

const hosts: { name: string; start: (sandbox: Sandbox) => Promise<Running[]> }[] = [
  { name: 'a host on a unix socket (npm start)', start: async (sandbox) => [await startStack(sandbox, ['--workers', '2'])] },
  {
    name: 'a host on TCP',
    start: startTcpHostStack,
  },
];

for (const { name, start } of hosts) {
  describe(`four CPU-bound requests on two workers, ${name}`, function () {
    let sandbox: Sandbox;
    let running: Running[] = [];

    before(async function () {
      sandbox = makeSandbox();
      writeFileSync(join(sandbox.controllers, 'Busy.ts'), BUSY);
      running = await start(sandbox);
    });

    after(async function () {
      for (const each of running) await each.stop();
      sandbox?.remove();
    });

    it('starts each exactly once, and answers each 200', async function () {
      const replies = await Promise.all([1, 2, 3, 4].map((n) => get(running[0].url, `/External/Busy?n=${n}`)));
      expect(replies.map((r) => `${r.status} ${r.body}`)).to.deep.equal(['200 busy 1', '200 busy 2', '200 busy 3', '200 busy 4']);
      // Both workers idle again: whatever waited in their sockets has been read, and started or refused.
      await eventually(
        async () => {
          const status = JSON.parse((await get(running[0].url, '/server-status?json')).body) as {
            hosts: { summary?: { idleProcesses: number } }[];
          };
          return status.hosts[0].summary?.idleProcesses === 2 ? true : undefined;
        },
        10_000,
        'two idle workers',
      );
      const ids = replies.map((reply) => reply.headers['x-request-id'] as string);
      const startsOf = (id: string) => readHostEvents(sandbox).filter((e) => e.includes(`[req ${id}]`) && e.includes('started busy'));
      await eventually(
        () => (ids.every((id) => startsOf(id).length > 0) ? true : undefined),
        5000,
        'the start of each request in host.log',
      );
      for (const id of ids) expect(startsOf(id), `the starts of request ${id}`).to.have.length(1);
    });
  });
}
