// `npm run bench:startup [-- root] [-- extqs args]`: how long `extqs start --workers 2` takes to its ready
// line, and the memory of each of its processes once idle (RSS; PSS, which counts shared pages once; and
// private memory, which does not depend on the other Node processes on the machine) 5 s after the ready
// line, and again at rest, REST_MS after it, once V8's memory reducer has run; median of RUNS starts.
// Pass another checkout's root first to measure it the same way (e.g. a worktree of an older commit, to
// record a before/after); arguments after it (e.g. `--pm ondemand`) go to `extqs start`.
import { loadavg } from 'node:os';
import { measureIdleStack, totalMb, type IdleStack, type Measure } from './idleStack.ts';
import { ROOT } from './processes.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
/** V8's memory reducer runs once a process has allocated little for 5 s, checked 8 s apart: 9-17 s after start here. */
const REST_MS = Number(process.env.BENCH_REST_MS ?? 25_000);
const [first, ...rest] = process.argv.slice(2);
const root = first === undefined || first.startsWith('--') ? ROOT : first;
const extraArgs = first === undefined || first.startsWith('--') ? process.argv.slice(2) : rest;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const loadBefore = loadavg()[0];
const runs: IdleStack[] = [];
for (let run = 0; run < RUNS; run++) runs.push(await measureIdleStack(root, 2, extraArgs, REST_MS));
const rested = runs.map((run) => ({ ...run, processes: run.atRest! }));
const roles = ['launcher', 'proxy', 'proxy worker', 'host', 'host worker'];
const perRole = (measure: Measure, sample = runs) =>
  Object.fromEntries(roles.map((role) => [role, Math.round(median(sample.map((r) => totalMb(r.processes, measure, role))))]));
const total = (measure: Measure, sample = runs) => Math.round(median(sample.map((r) => totalMb(r.processes, measure))));
console.log(
  JSON.stringify(
    {
      root,
      args: extraArgs,
      node: process.version,
      runs: RUNS,
      loadAverage: [loadBefore, loadavg()[0]].map((load) => Number(load.toFixed(2))),
      readyMs: Math.round(median(runs.map((r) => r.readyMs))),
      processes: median(runs.map((r) => r.processes.length)),
      rssMb: perRole('rssMb'),
      totalRssMb: total('rssMb'),
      pssMb: perRole('pssMb'),
      totalPssMb: total('pssMb'),
      privateMb: perRole('privateMb'),
      totalPrivateMb: total('privateMb'),
      atRest: {
        afterMs: REST_MS,
        rssMb: perRole('rssMb', rested),
        totalRssMb: total('rssMb', rested),
        pssMb: perRole('pssMb', rested),
        totalPssMb: total('pssMb', rested),
        privateMb: perRole('privateMb', rested),
        totalPrivateMb: total('privateMb', rested),
      },
    },
    null,
    1,
  ),
);
