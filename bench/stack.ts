// `npm run bench`'s whole-stack part: controller requests through `extqs start` as `npm start` runs it (a proxy
// worker per two CPUs, a host worker per CPU), beside the Node stack floor (nodeFloor.ts without logs in front of
// clusterFloor.ts), the logging floor (nodeFloor.ts writing the legacy's lines, in front of the same cluster) and,
// when nginx and php-fpm8.2 are installed, nginx + php-fpm (pm static, a child per CPU),
// taking turns (A B C A B C …) so drift cancels. Each stack's front, host and whole are the CPU of every process of
// its trees, from /proc; so is its memory (PSS and private, summed) as each run's load ends. Prints a table with
// the targets met or missed, and writes bench/results/stack-<time>.json.
// BENCH_ONLY, BENCH_SECONDS and BENCH_ROUNDS as bench/run.ts reads them; BENCH_EXTQS_ARGS adds flags to extqs's
// (`--proxy-workers 2`: the same stack with another shape).
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { makeSandbox } from '../tools/sandbox.ts';
import { LOAD_GENERATOR, runLoad, type LoadResult } from './load.ts';
import { getBody, median, treeCpuMicros } from './measure.ts';
import { hasNginx, startNginx, stopNginx } from './nginx.ts';
import { hasPhpFpm, PHP_FPM, startPhpFpm, stopPhpFpm } from './phpFpm.ts';
import { descendants, privateMb, pssMb, roleOf, ROOT, startNode, startNodeFloor, type Running } from './processes.ts';
import { writeSite } from './scenarios.ts';
import { STACK_ANSWER_BODY, STACK_SCENARIOS, stackPath, writeStackSite, type StackScenario } from './stackScenarios.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ONLY = process.env.BENCH_ONLY;
const EXTQS_ARGS = (process.env.BENCH_EXTQS_ARGS ?? '').split(' ').filter(Boolean);
const WARM_UP_SECONDS = 1;
const CPUS = availableParallelism();

type StackName = 'extqs' | 'node-floor' | 'logging-floor' | 'nginx-php-fpm';
const LABELS: Record<StackName, string> = {
  extqs: 'extqs',
  'node-floor': 'Node stack floor',
  'logging-floor': 'logging floor',
  'nginx-php-fpm': 'nginx + php-fpm',
};

/** CPU time so far, in µs, of a stack's front, its host, and all of its processes. */
interface CpuSample {
  front: number;
  host: number;
  whole: number;
}

/** MB of every process of a stack's trees: PSS (shared pages divided among their users) and private. */
interface MemorySample {
  pss: number;
  private: number;
}

interface Stack {
  name: StackName;
  url: string;
  cpu(): CpuSample;
  memory(): MemorySample;
}

interface StackRun extends LoadResult {
  /** CPU µs per answered request. */
  cpu: CpuSample;
  /** As the load ended: what the stack holds while serving. */
  memory: MemorySample;
}

interface StackSummary {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Answers other than 200, socket errors and timeouts, over every round. */
  failed: number;
  cpuMicrosPerRequest: CpuSample;
  memoryMb: MemorySample;
}

interface TargetVerdict {
  what: string;
  value: number;
  bound: string;
  met: boolean;
}

/** The pid of the launcher's child in `role` ('proxy' or 'host'). */
function childInRole(launcher: number, role: string): number {
  const children = readFileSync(`/proc/${launcher}/task/${launcher}/children`, 'utf8').trim().split(/\s+/).map(Number);
  const pid = children.find((child) => roleOf(child) === role);
  if (pid === undefined) throw new Error(`extqs start (pid ${launcher}) has no ${role} process`);
  return pid;
}

/** The CPU of the front's tree, the host's, and every tree in `whole` (extqs's launcher, neither front nor host, counts there). */
function treesCpu(front: number, host: number, whole: number[] = [front, host]): () => CpuSample {
  return () => ({ front: treeCpuMicros(front), host: treeCpuMicros(host), whole: whole.reduce((sum, pid) => sum + treeCpuMicros(pid), 0) });
}

/** The memory of every process of the trees under `roots`; one that exits meanwhile (an esbuild service) counts 0. */
function treesMemory(roots: number[]): () => MemorySample {
  const read = (measure: (pid: number) => number, pid: number) => {
    try {
      return measure(pid);
    } catch {
      return 0;
    }
  };
  return () => {
    const pids = roots.flatMap((root) => [root, ...descendants(root)]);
    const sum = (measure: (pid: number) => number) => pids.reduce((total, pid) => total + read(measure, pid), 0);
    return { pss: sum(pssMb), private: sum(privateMb) };
  };
}

function summarise(runs: StackRun[]): StackSummary {
  // A run with no answer has no latency or cost per answer (wrk reads its latencies as 0): left out.
  const answered = runs.filter((run) => run.total > 0);
  const ofAnswered = (figure: (run: StackRun) => number) => (answered.length > 0 ? median(answered.map(figure)) : Number.NaN);
  const cpu = (part: keyof CpuSample) => ofAnswered((run) => run.cpu[part]);
  return {
    requestsPerSecond: median(runs.map((run) => run.requestsPerSecond)),
    p50: ofAnswered((run) => run.p50),
    p99: ofAnswered((run) => run.p99),
    failed: runs.reduce((sum, run) => sum + run.unexpected + run.errors + run.timeouts, 0),
    cpuMicrosPerRequest: { front: cpu('front'), host: cpu('host'), whole: cpu('whole') },
    memoryMb: { pss: median(runs.map((run) => run.memory.pss)), private: median(runs.map((run) => run.memory.private)) },
  };
}

/** The scenario's targets, each met or missed; a target against a stack that did not run is left out. */
function verdicts(scenario: StackScenario, summaries: Partial<Record<StackName, StackSummary>>): TargetVerdict[] {
  const { floorRate, phpRate, floorCpu, noneFailed } = scenario.targets;
  const extqs = summaries.extqs!;
  const floor = summaries['node-floor'];
  const php = summaries['nginx-php-fpm'];
  const verdicts: TargetVerdict[] = [];
  if (floorRate !== undefined && floor) {
    const value = extqs.requestsPerSecond / floor.requestsPerSecond;
    verdicts.push({ what: "req/s over the Node stack floor's", value, bound: `>= ${floorRate}`, met: value >= floorRate });
  }
  if (phpRate !== undefined && php) {
    const value = extqs.requestsPerSecond / php.requestsPerSecond;
    verdicts.push({ what: "req/s over nginx + php-fpm's", value, bound: `>= ${phpRate}`, met: value >= phpRate });
  }
  if (floorCpu !== undefined && floor) {
    const value = extqs.cpuMicrosPerRequest.whole / floor.cpuMicrosPerRequest.whole;
    verdicts.push({ what: "whole-stack CPU per request over the floor's", value, bound: `<= ${floorCpu}`, met: value <= floorCpu });
  }
  if (noneFailed) verdicts.push({ what: 'failed', value: extqs.failed, bound: '0', met: extqs.failed === 0 });
  return verdicts;
}

function describeVerdict({ what, value, bound, met }: TargetVerdict): string {
  return `${what} ${Number.isInteger(value) ? value : value.toFixed(2)} (${bound} ${met ? 'met' : 'MISSED'})`;
}

async function main(): Promise<void> {
  const scenarios = STACK_SCENARIOS.filter((scenario) => !ONLY || scenario.name.includes(ONLY));
  if (scenarios.length === 0) return;
  const sandbox = makeSandbox();
  writeSite(sandbox);
  const phpDir = join(sandbox.dir, 'php');
  mkdirSync(phpDir);
  writeStackSite(sandbox.controllers, phpDir);
  const processes: Running[] = [];
  let nginx: ChildProcess | undefined;
  let phpFpm: ChildProcess | undefined;
  try {
    // As `npm start` runs it: no --workers or --proxy-workers, unless BENCH_EXTQS_ARGS gives them.
    const start = ['start', '--port', '0', '--listen', '127.0.0.1', '--www', sandbox.www, '--logs', sandbox.logs];
    const extqs = await startNode([join(ROOT, 'bin/extqs.js'), ...start, ...EXTQS_ARGS], 'extqs start');
    processes.push(extqs);
    const launcher = extqs.child.pid!;
    const floorSocket = join(sandbox.dir, 'cluster-floor.sock');
    const clusterFloor = await startNode(['--import', 'tsx', join(ROOT, 'bench', 'clusterFloor.ts'), floorSocket], 'clusterFloor.ts');
    processes.push(clusterFloor);
    const nodeFloor = await startNodeFloor(floorSocket, sandbox.publicDir);
    processes.push(nodeFloor);
    // The same front writing the legacy's lines: the least a Node stack pays that logs as extqs does.
    const loggingFloor = await startNodeFloor(floorSocket, sandbox.publicDir, join(sandbox.dir, 'logging-floor-logs'));
    processes.push(loggingFloor);
    const [proxy, host] = [childInRole(launcher, 'proxy'), childInRole(launcher, 'host')];
    const serving = (pid: number, role: string) => descendants(pid).filter((child) => roleOf(child) === role).length;
    // What the defaults gave on this machine, at start (--pm ondemand starts no host worker): a proxy with no workers
    // serves the port itself.
    const extqsShape = { proxyWorkers: serving(proxy, 'proxy worker'), hostWorkers: serving(host, 'host worker') };
    const proxyShape = extqsShape.proxyWorkers === 0 ? 'one proxy process' : `${extqsShape.proxyWorkers} proxy workers`;
    const stacks: Stack[] = [
      { name: 'extqs', url: extqs.url, cpu: treesCpu(proxy, host, [launcher]), memory: treesMemory([launcher]) },
      {
        name: 'node-floor',
        url: nodeFloor.url,
        cpu: treesCpu(nodeFloor.child.pid!, clusterFloor.child.pid!),
        memory: treesMemory([nodeFloor.child.pid!, clusterFloor.child.pid!]),
      },
      {
        name: 'logging-floor',
        url: loggingFloor.url,
        cpu: treesCpu(loggingFloor.child.pid!, clusterFloor.child.pid!),
        memory: treesMemory([loggingFloor.child.pid!, clusterFloor.child.pid!]),
      },
    ];
    if (hasNginx() && hasPhpFpm()) {
      const dir = join(sandbox.dir, 'nginx-php-fpm');
      mkdirSync(dir);
      const fpm = await startPhpFpm(dir, CPUS);
      phpFpm = fpm.child;
      const started = await startNginx('nginx-php.conf', dir, { WORKERS: String(CPUS), SCRIPTS: phpDir, FPM_SOCKET: fpm.socket });
      nginx = started.child;
      stacks.push({
        name: 'nginx-php-fpm',
        url: `http://127.0.0.1:${started.port}`,
        cpu: treesCpu(nginx.pid!, phpFpm.pid!),
        memory: treesMemory([nginx.pid!, phpFpm.pid!]),
      });
    } else {
      process.stderr.write(`nginx or ${PHP_FPM} is not on PATH (Debian: nginx-light, php8.2-fpm): no nginx + php-fpm stack\n`);
    }

    const raw: Record<string, Partial<Record<StackName, StackRun[]>>> = {};
    for (const scenario of scenarios) {
      const runs: Partial<Record<StackName, StackRun[]>> = (raw[scenario.name] = {});
      const load = (stack: Stack, seconds: number) => runLoad(stack.url, [stackPath(scenario)], [200], seconds, scenario.connections);
      for (const stack of stacks) await load(stack, WARM_UP_SECONDS);
      for (let round = 0; round < ROUNDS; round++) {
        for (const stack of stacks) {
          // A stack that queued the last run's requests (php-fpm's two children, 200 ms each) works them off after
          // it: one request answered means the queue ahead of it is gone, so every run starts from an idle stack.
          // Its answer is checked too: a stack answering something else is not measured.
          const reply = await getBody(stack.url + stackPath(scenario));
          if (reply.status !== 200 || reply.body !== STACK_ANSWER_BODY)
            throw new Error(`${stack.name} answered ${reply.status} ${JSON.stringify(reply.body)}, not 200 ${STACK_ANSWER_BODY}`);
          const before = stack.cpu();
          const result = await load(stack, SECONDS);
          const after = stack.cpu();
          const memory = stack.memory();
          const perRequest = (part: keyof CpuSample) => (after[part] - before[part]) / result.total;
          (runs[stack.name] ??= []).push({
            ...result,
            cpu: { front: perRequest('front'), host: perRequest('host'), whole: perRequest('whole') },
            memory,
          });
          process.stderr.write(`${scenario.name} / ${stack.name} round ${round + 1}: ${Math.round(result.requestsPerSecond)} req/s\n`);
        }
      }
    }

    const rows = scenarios.map((scenario) => {
      const summaries: Partial<Record<StackName, StackSummary>> = {};
      for (const stack of stacks) summaries[stack.name] = summarise(raw[scenario.name][stack.name]!);
      return { scenario: scenario.name, connections: scenario.connections, stacks: summaries, targets: verdicts(scenario, summaries) };
    });

    const pad = (text: string, width: number) => text.padEnd(width);
    const micros = (value: number) => (Number.isFinite(value) ? String(Math.round(value)) : '-');
    const milliseconds = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : '-');
    const lines = [
      `whole stack, ${EXTQS_ARGS.length > 0 ? EXTQS_ARGS.join(' ') : 'npm start defaults'} (${proxyShape}, ${extqsShape.hostWorkers} host workers at start), ${LOAD_GENERATOR}, ${ROUNDS} rounds of ${SECONDS} s per stack, medians`,
      `${pad('scenario', 36)}${pad('stack', 18)}${pad('conns', 7)}${pad('req/s', 9)}${pad('p50/p99 ms', 16)}${pad('failed', 8)}${pad('CPU us/req front/host/whole', 30)}MB PSS/private`,
      ...rows.flatMap((row) => [
        ...Object.entries(row.stacks).map(([name, s], i) => {
          const { front, host, whole } = s.cpuMicrosPerRequest;
          const memory = `${Math.round(s.memoryMb.pss)}/${Math.round(s.memoryMb.private)}`;
          return (
            `${pad(i === 0 ? row.scenario : '', 36)}${pad(LABELS[name as StackName], 18)}${pad(String(row.connections), 7)}` +
            `${pad(String(Math.round(s.requestsPerSecond)), 9)}${pad(`${milliseconds(s.p50)}/${milliseconds(s.p99)}`, 16)}${pad(String(s.failed), 8)}` +
            pad([front, host, whole].map(micros).join('/'), 30) +
            memory
          );
        }),
        `${pad('', 36)}targets: ${row.targets.map(describeVerdict).join('; ')}`,
      ]),
    ];
    process.stdout.write(`\n${lines.join('\n')}\n`);
    const out = join(ROOT, 'bench', 'results', `stack-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    const results = {
      date: new Date().toISOString(),
      node: process.version,
      loadGenerator: LOAD_GENERATOR,
      seconds: SECONDS,
      rounds: ROUNDS,
      cpus: CPUS,
      extqs: { args: EXTQS_ARGS, ...extqsShape },
      rows,
      raw,
    };
    writeFileSync(out, JSON.stringify(results, null, 2));
    process.stdout.write(`\nwritten to ${out}\n`);
  } finally {
    if (nginx) await stopNginx(nginx);
    if (phpFpm) await stopPhpFpm(phpFpm);
    for (const p of processes.reverse()) await p.stop();
    sandbox.remove();
  }
}

await main();
