// `npm run bench:front`: what a front costs a relayed controller request, front by front, in front of one
// clusterFloor.ts host: the Node floor (nodeFloor.ts: node:http + undici), the same with a hand-written
// client (rawClientFloor.ts), the logging floor, and one extqs proxy process with its builtin engine. Each
// round starts every front afresh, in turns whose order alternates, and reads its CPU (user + system) per
// request from /proc: a process's placement beside the load generator and the host moves it by 5-13 %, so
// only medians over several starts compare. Prints the medians and writes bench/results/front-<time>.json.
// BENCH_SECONDS and BENCH_ROUNDS as bench/run.ts reads them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeSandbox } from '../tools/sandbox.ts';
import { runLoad } from './load.ts';
import { cpuMicros, median } from './measure.ts';
import { ROOT, startCommand, startNode, startNodeFloor, type Running } from './processes.ts';
import { writeSite } from './scenarios.ts';
import { STACK_SCENARIOS, stackPath } from './stackScenarios.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const WARM_UP_SECONDS = 1;
const CONNECTIONS = 50;

type FrontName = 'node-floor' | 'hand-written-client' | 'logging-floor' | 'extqs';

const sandbox = makeSandbox();
writeSite(sandbox);
const hostSocket = join(sandbox.dir, 'cluster.sock');
const host = await startNode(['--import', 'tsx', join(ROOT, 'bench', 'clusterFloor.ts'), hostSocket], 'clusterFloor.ts');

const FRONTS: Record<FrontName, () => Promise<Running>> = {
  'node-floor': () => startNodeFloor(hostSocket, sandbox.publicDir),
  'hand-written-client': () => startNode(['--import', 'tsx', join(ROOT, 'bench', 'rawClientFloor.ts'), hostSocket], 'rawClientFloor.ts'),
  'logging-floor': () => startNodeFloor(hostSocket, sandbox.publicDir, join(sandbox.dir, 'floor-logs')),
  extqs: () => extqsProxy(['--forwarder', 'builtin']),
};

/** One extqs proxy process in front of the cluster, with `extra` flags. */
function extqsProxy(extra: string[]): Promise<Running> {
  mkdirSync(sandbox.logs, { recursive: true });
  const listen = ['--port', '0', '--listen', '127.0.0.1', '--www', sandbox.www, '--logs', sandbox.logs];
  return startCommand('proxy', [...listen, '--upstream', `unix:${hostSocket}`, '--proxy-workers', '1', ...extra]);
}

interface FrontRun {
  requestsPerSecond: number;
  /** CPU µs of the front's process per answered request. */
  cpuMicros: number;
}

const path = stackPath(STACK_SCENARIOS[0]);
const names = Object.keys(FRONTS) as FrontName[];
const runs = new Map<FrontName, FrontRun[]>(names.map((name) => [name, []]));
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 ? [...names].reverse() : names) {
      const front = await FRONTS[name]();
      try {
        await runLoad(front.url, [path], [200], WARM_UP_SECONDS, CONNECTIONS);
        const before = cpuMicros(front.child.pid!);
        const load = await runLoad(front.url, [path], [200], SECONDS, CONNECTIONS);
        if (load.unexpected + load.errors > 0) throw new Error(`${name}: ${load.unexpected} unexpected answers, ${load.errors} errors`);
        runs.get(name)!.push({ requestsPerSecond: load.requestsPerSecond, cpuMicros: (cpuMicros(front.child.pid!) - before) / load.total });
      } finally {
        await front.stop();
      }
    }
  }
} finally {
  await host.stop();
  sandbox.remove();
}

const summary = Object.fromEntries(
  names.map((name) => {
    const cpu = runs.get(name)!.map((run) => run.cpuMicros);
    const requestsPerSecond = median(runs.get(name)!.map((run) => run.requestsPerSecond));
    return [name, { cpuMicros: median(cpu), cpuRange: [Math.min(...cpu), Math.max(...cpu)], requestsPerSecond }];
  }),
);
console.log(`front CPU per relayed JSON request, ${ROUNDS} starts each (median, range), ${CONNECTIONS} connections`);
for (const [name, { cpuMicros: micros, cpuRange, requestsPerSecond }] of Object.entries(summary)) {
  const range = cpuRange.map((v) => v.toFixed(1)).join('-');
  console.log(`${name.padEnd(20)} ${micros.toFixed(1).padStart(6)} µs  (${range})  ${Math.round(requestsPerSecond)} req/s`);
}
const out = join(ROOT, 'bench', 'results', `front-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
writeFileSync(
  out,
  JSON.stringify({ seconds: SECONDS, rounds: ROUNDS, connections: CONNECTIONS, path, summary, runs: Object.fromEntries(runs) }, null, 2),
);
console.log(`results: ${out}`);
