// The load check shared by load.test.ts (npm test) and load.slow.test.ts (20,000 requests at 200
// connections): the four observed paths, mixed, through the real launcher; then every answer's status,
// the processes' open files and memory back near their idle level, and (last: it stops the stack to
// drain the logs) the log lines per request.
import { readdirSync, readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import autocannon from 'autocannon';
import { expect } from 'chai';
import { IDLE_UPSTREAM_SOCKET_MS } from '../../proxy/forward/forwarding.ts';
import { get } from '../helpers/http.ts';
import { descendants, eventually, makeSandbox, readLog, roleOf, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** The observed requests and what the default install answers (docs/design.md §1). */
const PATHS = [
  { path: '/External/Latest?sn=123&no=1', status: 500 },
  { path: '/External/Latest?sn=123&no=', status: 500 },
  { path: '/External/Alarm?all_alarm&all', status: 500 },
  { path: '/favicon.ico', status: 404 },
] as const;

/** What a leak may add once the load is over and idle sockets are gone. */
const FD_SLACK = 10;
const RSS_SLACK_MB = 50;

interface Footprint {
  fds: number;
  rssMb: number;
}

function footprint(pid: number): Footprint {
  const rssKb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return { fds: readdirSync(`/proc/${pid}/fd`).length, rssMb: Math.round(rssKb / 102.4) / 10 };
}

/** proxy, its workers, host pool and host workers: all but the proxy's workers from their start-up lines. */
function stackPids(sandbox: Sandbox): Record<string, number> {
  const pids: Record<string, number> = {};
  for (const line of readLog(sandbox, 'error.log')) {
    const proxy = /extqs proxy (\d+) configured/.exec(line);
    if (proxy) pids.proxy = Number(proxy[1]);
  }
  // The proxy's workers hold the client connections and write no line of their own at start.
  if (pids.proxy) for (const child of descendants(pids.proxy)) if (roleOf(child) === 'proxy worker') pids[`proxy worker ${child}`] = child;
  for (const line of readLog(sandbox, 'host.log')) {
    const pool = /Host pool (\d+) serving/.exec(line);
    if (pool) pids.pool = Number(pool[1]);
    const worker = /Worker (\d+) ready/.exec(line);
    if (worker) pids[`worker ${worker[1]}`] = Number(worker[1]);
  }
  return pids;
}

const count = (lines: string[], needle: string) => lines.filter((l) => l.includes(needle)).length;

type Tally = Map<string, Map<number, number>>;

const newTally = (): Tally => new Map(PATHS.map((p) => [p.path, new Map<number, number>()]));

function record(tally: Tally, path: string, status: number): void {
  const statuses = tally.get(path)!;
  statuses.set(status, (statuses.get(status) ?? 0) + 1);
}

/** The log lines the requests in `tallies` should have left: an access line each, an error or host line a failure. */
function expectedLines(...tallies: Tally[]) {
  const served = (path: string) => tallies.reduce((sum, t) => sum + [...t.get(path)!.values()].reduce((a, b) => a + b, 0), 0);
  const controllerFailures = served(PATHS[0].path) + served(PATHS[1].path) + served(PATHS[2].path);
  return {
    access: controllerFailures + served(PATHS[3].path),
    accessLatest: served(PATHS[0].path) + served(PATHS[1].path),
    accessAlarm: served(PATHS[2].path),
    accessFavicon: served(PATHS[3].path),
    endOfScript: controllerFailures,
    fileDoesNotExist: served(PATHS[3].path),
    failedOpening: controllerFailures,
  };
}

/** The same counts, as the logs have them now. */
function loggedLines(sandbox: Sandbox): ReturnType<typeof expectedLines> {
  const access = readLog(sandbox, 'access.log');
  const errors = readLog(sandbox, 'error.log');
  const host = readLog(sandbox, 'host.log');
  return {
    access: access.length,
    accessLatest:
      count(access, '"GET /External/Latest?sn=123&no=1 HTTP/1.1" 500 ') + count(access, '"GET /External/Latest?sn=123&no= HTTP/1.1" 500 '),
    accessAlarm: count(access, '"GET /External/Alarm?all_alarm&all HTTP/1.1" 500 '),
    accessFavicon: count(access, '"GET /favicon.ico HTTP/1.1" 404 '),
    endOfScript: count(errors, 'End of script output before headers'),
    fileDoesNotExist: count(errors, 'File does not exist'),
    failedOpening: count(host, 'Failed opening controller script'),
  };
}

export function describeLoad(requests: number, connections: number): void {
  describe(`${requests} requests at ${connections} connections across the four observed paths`, function () {
    this.timeout(Math.max(60_000, requests * 10));
    let sandbox: Sandbox;
    let stack: Running;
    let pids: Record<string, number>;
    const cold: Record<string, Footprint> = {};
    const idle: Record<string, Footprint> = {};
    // Statuses per path: before the measured load (first requests and warm-up), and of the load.
    const beforeLoad = newTally();
    const byPath = newTally();
    let result: autocannon.Result;

    before(async function () {
      sandbox = makeSandbox();
      stack = await startStack(sandbox, ['--workers', '2', '--proxy-workers', '2']);
      // Every path once, so the pids are in the logs and modules loaded on first use count as idle.
      for (const { path } of PATHS) record(beforeLoad, path, (await get(stack.url, path)).status);
      pids = await eventually(
        () => {
          const found = stackPids(sandbox);
          return found.proxy && found.pool && Object.keys(found).length === 6 ? found : undefined;
        },
        5000,
        'the pids of the proxy, its two workers, the pool and two workers',
      );
      for (const [name, pid] of Object.entries(pids)) cold[name] = footprint(pid);
      // Then as many connections as the run, ten requests each: V8 grows its heap to what this
      // concurrency needs and keeps it; a leak is what grows past that with 10x or 100x more requests.
      await autocannon({
        url: stack.url,
        connections,
        amount: connections * 10,
        requests: PATHS.map(({ path }) => ({
          method: 'GET' as const,
          path,
          onResponse: (status: number) => record(beforeLoad, path, status),
        })),
      });
      // The client connections close at once; the proxy's idle keep-alive sockets to the host (kept now
      // that a missing controller no longer closes its connection) go after IDLE_UPSTREAM_SOCKET_MS.
      const proxies = Object.keys(pids).filter((name) => name.startsWith('proxy'));
      await eventually(
        () => (proxies.every((name) => footprint(pids[name]).fds <= cold[name].fds) ? true : undefined),
        IDLE_UPSTREAM_SOCKET_MS + 5000,
        'the warm-up connections closed',
      );
      for (const [name, pid] of Object.entries(pids)) idle[name] = footprint(pid);
      // A line reaches its file after the answer reaches the client (a proxy worker hands it to the primary): the
      // load starts once the warm-up's lines are all in, so a line lost or doubled is the load's, not the warm-up's.
      const warmedUp = expectedLines(beforeLoad);
      let logged = loggedLines(sandbox);
      await eventually(
        () => (isDeepStrictEqual((logged = loggedLines(sandbox)), warmedUp) ? true : undefined),
        5000,
        `the warm-up's log lines ${JSON.stringify(warmedUp)}`,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; the logs have ${JSON.stringify(logged)}`);
      });

      result = await autocannon({
        url: stack.url,
        connections,
        amount: requests,
        timeout: 10,
        requests: PATHS.map(({ path }) => ({
          method: 'GET' as const,
          path,
          onResponse: (status: number) => record(byPath, path, status),
        })),
      });
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    it('answers every request with the status of the default install, without an error or a timeout', function () {
      const statuses = Object.fromEntries([...byPath].map(([path, tally]) => [path, Object.fromEntries(tally)]));
      process.stdout.write(
        `      statuses: ${JSON.stringify(statuses)}; errors ${result.errors}, timeouts ${result.timeouts}, ${Math.round(result.requests.average)} req/s\n`,
      );
      expect([result.errors, result.timeouts]).to.deep.equal([0, 0]);
      const total = [...byPath.values()].reduce((sum, tally) => sum + [...tally.values()].reduce((a, b) => a + b, 0), 0);
      expect(total).to.equal(requests);
      for (const { path, status } of PATHS) expect(Object.fromEntries(byPath.get(path)!), path).to.have.all.keys(String(status));
    });

    it(`brings open files back within +${FD_SLACK} and RSS within +${RSS_SLACK_MB} MB of idle, in every process`, async function () {
      const busy = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, footprint(pid)]));
      // Idle keep-alive sockets to the host close after 10 s (proxy/forward/forwarding.ts), so wait up to 20 s.
      const now = () => Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, footprint(pid)]));
      const settled = await eventually(
        () => {
          const at = now();
          return Object.keys(at).every(
            (name) => at[name].fds <= idle[name].fds + FD_SLACK && at[name].rssMb <= idle[name].rssMb + RSS_SLACK_MB,
          )
            ? at
            : undefined;
        },
        20_000,
        `fds within +${FD_SLACK} and RSS within +${RSS_SLACK_MB} MB of idle ${JSON.stringify(idle)}; last ${JSON.stringify(now())}`,
      );
      process.stdout.write(
        `      fds/RSS MB at start ${JSON.stringify(cold)}\n      after the warm-up ${JSON.stringify(idle)}\n      at the end of the load ${JSON.stringify(busy)}\n      after ${JSON.stringify(settled)}\n`,
      );
    });

    it('writes exactly one access-log line per request, and one error or host line per failure', async function () {
      // Every response has ended, so every line is at most one write away; a stop drains the loggers.
      expect(await stack.stop()).to.equal(0);
      const lines = loggedLines(sandbox);
      process.stdout.write(`      lines: ${JSON.stringify(lines)}\n`);
      expect(lines).to.deep.equal(expectedLines(beforeLoad, byPath));
    });
  });
}
