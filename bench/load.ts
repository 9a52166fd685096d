// One load run, in a process of its own so the load generator never shares an event loop with what it
// measures: wrk (C; Debian `wrk`) when it is on PATH, since autocannon, itself Node, takes a good part of
// a 2-core machine from the front it measures; autocannon otherwise.
import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const AUTOCANNON = fileURLToPath(new URL('../node_modules/autocannon/autocannon.js', import.meta.url));
const AUTOCANNON_MIX = fileURLToPath(new URL('./autocannonMix.ts', import.meta.url));
const WRK_SCRIPT = fileURLToPath(new URL('./wrk.lua', import.meta.url));

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  total: number;
  /** Responses with a status the scenario expects. */
  expected: number;
  /** Responses with any other status. */
  unexpected: number;
  errors: number;
  timeouts: number;
}

export const LOAD_GENERATOR: 'wrk' | 'autocannon' = (() => {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return 'wrk';
  } catch (err) {
    // wrk --version prints its usage and exits 1; only a missing binary is ENOENT.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'autocannon' : 'wrk';
  }
})();

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(command, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) =>
      err ? reject(new Error(`${command} failed: ${err.message}`, { cause: err })) : resolve(stdout),
    ),
  );
}

function counted(byStatus: Record<string, number>, expectedStatuses: readonly number[]) {
  const total = Object.values(byStatus).reduce((sum, n) => sum + n, 0);
  const expected = expectedStatuses.reduce((sum, status) => sum + (byStatus[String(status)] ?? 0), 0);
  return { total, expected, unexpected: total - expected };
}

type Fields = Readonly<Record<string, string>>;

async function runWrk(
  origin: string,
  paths: readonly string[],
  expectedStatuses: readonly number[],
  seconds: number,
  connections: number,
  headers: Fields,
) {
  // One thread: a single wrk thread drives well over 100k req/s here, and the second core stays the front's.
  // wrk.lua takes `H:<field>` arguments as request fields.
  const fields = Object.entries(headers).map(([name, value]) => `H:${name}: ${value}`);
  const stdout = await run('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '-s', WRK_SCRIPT, origin, '--', ...fields, ...paths]);
  const line = stdout.split('\n').find((l) => l.startsWith('{'));
  if (!line) throw new Error(`wrk printed no result:\n${stdout}`);
  const r = JSON.parse(line) as {
    requests: number;
    durationUs: number;
    p50Us: number;
    p99Us: number;
    statuses: Record<string, number>;
    errors: number;
    timeouts: number;
  };
  return {
    requestsPerSecond: r.requests / (r.durationUs / 1e6),
    p50: r.p50Us / 1000,
    p99: r.p99Us / 1000,
    ...counted(r.statuses, expectedStatuses),
    errors: r.errors,
    timeouts: r.timeouts,
  };
}

async function runAutocannon(
  origin: string,
  paths: readonly string[],
  expectedStatuses: readonly number[],
  seconds: number,
  connections: number,
  headers: Fields,
) {
  const common = [
    '-c',
    String(connections),
    '-d',
    String(seconds),
    ...Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}=${value}`]),
  ];
  // The CLI takes one URL; a mix of paths needs autocannon's API, run by a script of its own.
  const stdout =
    paths.length === 1
      ? await run(process.execPath, [AUTOCANNON, ...common, '-j', '-n', origin + paths[0]])
      : await run(process.execPath, ['--import', 'tsx', AUTOCANNON_MIX, origin, String(connections), String(seconds), ...paths]);
  const r = JSON.parse(stdout);
  const byStatus = Object.fromEntries(
    Object.entries((r.statusCodeStats ?? {}) as Record<string, { count: number }>).map(([s, v]) => [s, v.count]),
  );
  return {
    requestsPerSecond: r.requests.average as number,
    p50: r.latency.p50 as number,
    p99: r.latency.p99 as number,
    ...counted(byStatus, expectedStatuses),
    errors: r.errors as number,
    timeouts: r.timeouts as number,
  };
}

/** `paths` are requested in turn on every connection, each with `headers`; p50/p99 in ms. */
export function runLoad(
  origin: string,
  paths: readonly string[],
  expectedStatuses: readonly number[],
  seconds: number,
  connections = 50,
  headers: Fields = {},
): Promise<LoadResult> {
  return (LOAD_GENERATOR === 'wrk' ? runWrk : runAutocannon)(origin, paths, expectedStatuses, seconds, connections, headers);
}
