// `npm run bench:startup`: how long `extqs start --workers 2` takes to its ready line, and the resident
// memory of each of its processes once idle, median of RUNS starts. Pass another checkout's root to
// measure it the same way (e.g. a worktree of an older commit, to record a before/after).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { makeSandbox } from '../tools/sandbox.ts';
import { descendants, roleOf, ROOT, rssMb } from './processes.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const IDLE_MS = 5_000;
const root = process.argv[2] ?? ROOT;

async function startOnce(): Promise<{ readyMs: number; rss: Record<string, number[]> }> {
  const tree = makeSandbox();
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [join(root, 'bin/extqs.js'), 'start', '--port', '0', '--listen', '127.0.0.1', '--workers', '2', '--www', tree.www, '--logs', tree.logs],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    await new Promise<void>((resolve) =>
      createInterface({ input: child.stdout }).on('line', (line) => line.startsWith('listening on ') && resolve()),
    );
    const readyMs = performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const rss: Record<string, number[]> = {};
    for (const pid of [child.pid!, ...descendants(child.pid!)]) (rss[roleOf(pid)] ??= []).push(rssMb(pid));
    return { readyMs, rss };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    tree.remove();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const runs: Awaited<ReturnType<typeof startOnce>>[] = [];
for (let run = 0; run < RUNS; run++) runs.push(await startOnce());
const roles = ['launcher', 'proxy', 'host', 'host worker'];
const perRole = Object.fromEntries(roles.map((role) => [role, median(runs.map((r) => (r.rss[role] ?? []).reduce((a, b) => a + b, 0)))]));
const total = median(
  runs.map((r) =>
    Object.values(r.rss)
      .flat()
      .reduce((a, b) => a + b, 0),
  ),
);
console.log(
  JSON.stringify(
    {
      root,
      node: process.version,
      runs: RUNS,
      readyMs: Math.round(median(runs.map((r) => r.readyMs))),
      rssMb: perRole,
      totalRssMb: Math.round(total),
    },
    null,
    1,
  ),
);
