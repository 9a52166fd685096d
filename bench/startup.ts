// `npm run bench:startup`: how long `extqs start --workers 2` takes to its ready line, and the resident
// memory (RSS, and PSS, which counts shared pages once) of each of its processes once idle, median of
// RUNS starts. Pass another checkout's root to measure it the same way (e.g. a worktree of an older
// commit, to record a before/after).
import { measureIdleStack, totalMb, type IdleStack } from './idleStack.ts';
import { ROOT } from './processes.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const root = process.argv[2] ?? ROOT;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const runs: IdleStack[] = [];
for (let run = 0; run < RUNS; run++) runs.push(await measureIdleStack(root));
const roles = ['launcher', 'proxy', 'proxy worker', 'host', 'host worker'];
const perRole = (measure: 'rssMb' | 'pssMb') =>
  Object.fromEntries(roles.map((role) => [role, Math.round(median(runs.map((r) => totalMb(r.processes, measure, role))))]));
console.log(
  JSON.stringify(
    {
      root,
      node: process.version,
      runs: RUNS,
      readyMs: Math.round(median(runs.map((r) => r.readyMs))),
      rssMb: perRole('rssMb'),
      totalRssMb: Math.round(median(runs.map((r) => totalMb(r.processes, 'rssMb')))),
      pssMb: perRole('pssMb'),
      totalPssMb: Math.round(median(runs.map((r) => totalMb(r.processes, 'pssMb')))),
    },
    null,
    1,
  ),
);
