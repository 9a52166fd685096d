// The memory a request in flight costs: `extqs start` with its defaults, a controller that awaits a timer,
// HELD requests sent at once and held in that await; the PSS of the tree before them and while they are
// held, the difference divided by HELD. Used by `npm run bench` and `npm run bench:held`.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request, Agent } from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { writeFileSync } from 'node:fs';
import { makeSandbox } from '../tools/sandbox.ts';
import { memoryOfTree, totalMb, type ProcessMemory } from './idleStack.ts';
import { roleOf } from './processes.ts';

export const HELD = 1_500;
/** Long enough for HELD connections to open and reach a worker on a loaded machine, then the measure. */
const HOLD_MS = 12_000;
/** After the last request is sent: every one has reached its controller's await. */
const MEASURE_AFTER_MS = 6_000;
/** The controller compiled and the tree at rest before the "before" figure (V8's memory reducer runs 9-17 s in). */
const REST_MS = 20_000;

export interface HeldRequests {
  held: number;
  before: ProcessMemory[];
  during: ProcessMemory[];
  beforePssMb: number;
  duringPssMb: number;
  /** (during - before) / held, in KB. */
  pssKbPerRequest: number;
}

function get(url: URL, agent: Agent): Promise<{ status: number; at: number }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, at: performance.now() }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Starts the stack of the checkout at `root` with its defaults and measures HELD requests held in an await. */
export async function measureHeldRequests(root: string): Promise<HeldRequests> {
  const tree = makeSandbox();
  writeFileSync(
    join(tree.controllers, 'Held.ts'),
    `export default async () => {\n  await new Promise((resolve) => setTimeout(resolve, ${HOLD_MS}));\n  return { held: true };\n};\n`,
  );
  const child = spawn(
    process.execPath,
    [join(root, 'bin/extqs.js'), 'start', '--port', '0', '--listen', '127.0.0.1', '--www', tree.www, '--logs', tree.logs],
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  try {
    const base = await new Promise<string>((resolve) =>
      createInterface({ input: child.stdout }).on('line', (line) => line.startsWith('listening on ') && resolve(line.split(' ')[2])),
    );
    const url = new URL('/External/Held', base);
    // Both workers compile it (a request each, held at once), then the tree rests.
    await Promise.all([get(url, agent), get(url, agent)]);
    await new Promise((resolve) => setTimeout(resolve, REST_MS));
    const before = memoryOfTree(child.pid!, roleOf);
    const answers = Array.from({ length: HELD }, () => get(url, agent));
    await new Promise((resolve) => setTimeout(resolve, MEASURE_AFTER_MS));
    const measuredAt = performance.now();
    const during = memoryOfTree(child.pid!, roleOf);
    const results = await Promise.all(answers);
    const early = results.filter((r) => r.status !== 200 || r.at < measuredAt).length;
    if (early > 0) throw new Error(`${early} of ${HELD} held requests failed or were answered before the measure`);
    const beforePssMb = totalMb(before, 'pssMb');
    const duringPssMb = totalMb(during, 'pssMb');
    return { held: HELD, before, during, beforePssMb, duringPssMb, pssKbPerRequest: ((duringPssMb - beforePssMb) * 1024) / HELD };
  } finally {
    agent.destroy();
    child.kill('SIGTERM');
    await once(child, 'exit');
    tree.remove();
  }
}

// `npm run bench:held`: this measure alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { ROOT } = await import('./processes.ts');
  const held = await measureHeldRequests(ROOT);
  const byRole = (processes: ProcessMemory[]) => processes.map((p) => `${p.role} ${p.pssMb.toFixed(1)}`).join(', ');
  console.log(`PSS MB before: ${byRole(held.before)}; all ${held.beforePssMb.toFixed(1)}`);
  console.log(`PSS MB with ${held.held} held: ${byRole(held.during)}; all ${held.duringPssMb.toFixed(1)}`);
  console.log(`per request in flight: ${held.pssKbPerRequest.toFixed(1)} KB PSS (node ${process.version})`);
}
