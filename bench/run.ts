// `npm run bench`: the memory of `extqs start --workers 2` and of nginx at rest; the four observed paths
// and the observed traffic mix through extqs (with each forwarding engine) and, when nginx is installed,
// through nginx in front of the same host, interleaved (A B C A B C …) so drift cancels; then reload
// latency under load and memory over 1,000 reloads. Prints a table and writes bench/results/<time>.json.
// The first figure is the front's CPU time per request (steady across runs); the req/s ratio is the default
// engine (builtin) against nginx. The Node floor (nodeFloor.ts) is the least a Node.js front does on each
// path: what is left above it is extqs's own work; the logging floor (the same with a logs directory) is
// the least that also answers and logs as the legacy did, which splits that work into what the seed's
// behaviour requires and what extqs's structure adds: the front is held to the logging floor + 15 µs. The
// host floor (hostFloor.ts) is the least a Node.js host does for a controller with no file, behind the same
// proxy: the host's CPU on that path is weighed against it. bench/stack.ts measures the whole stack.
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SETTINGS } from '../common/settings.ts';
import { makeSandbox } from '../tools/sandbox.ts';
import { measureHeldRequests, type HeldRequests } from './heldRequests.ts';
import { measureIdleStack, memoryOfTree, totalMb, type IdleStack, type ProcessMemory } from './idleStack.ts';
import { ROOT, startCommand, startNode, startNodeFloor, type Running } from './processes.ts';
import { LOAD_GENERATOR, runLoad, type LoadResult } from './load.ts';
import { cpuMicros, getBody, median } from './measure.ts';
import { SCENARIOS, writeSite } from './scenarios.ts';
import { hasNginx, startNginx, stopNginx } from './nginx.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** Only the scenarios whose name contains this, and no idle-memory or reload measurements: a quick look. */
const ONLY = process.env.BENCH_ONLY;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WORKERS = process.env.BENCH_WORKERS ?? '1';
const RELOADS_FOR_LATENCY = 50;
const LOAD_SETTLE_MS = 1000;
const RELOADS_FOR_MEMORY = 1000;
const RELOAD_MEMORY_WINDOWS = 3;
/** Reloads before the memory baseline, as test/fixtures/reloadMemory.ts does. */
const RELOADS_WARM_UP = 500;

/** The front's CPU per request at most this many times nginx's, on every path. */
const CPU_TARGET = 2;
/** The host's CPU per request at most this many times the host floor's, where it is measured. */
const HOST_FLOOR_TARGET = 1.5;
/**
 * The front's CPU per request at most the logging floor's plus this many µs, on every path the floor serves: the
 * logging floor does what the legacy's answers and lines require, so what is above it is extqs's structure.
 */
const FLOOR_GAP_TARGET_US = 15;
const RELOAD_P99_TARGET_MS = 50;
const RELOAD_GROWTH_TARGET_MB = 10;
/** CPU time one second of a 16-core machine holds, in µs. */
const SIXTEEN_CORES_US = 16 * 1e6;
const IDLE_TARGETS_MB = { all: 200, launcher: 40 };
const IDLE_ROLES = ['launcher', 'proxy', 'proxy worker', 'host', 'host worker'];

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * The host's RSS at rest: the lowest of a sample a second for REST_SECONDS. V8 collects lazily, and RSS
 * right after a burst of reloads swings with the collector's cycle; at rest, V8's memory reducer may give
 * pages back or not: after 500 reloads it did within 15 s (117 -> 76 MB), after 1,000 more it had not in 60
 * s (112 MB), while heap snapshots at both points were the same size (13.1 and 12.7 MB). So the growth is
 * measured over RELOAD_MEMORY_WINDOWS windows and the median one reported, as the test suite does.
 */
const REST_SECONDS = 20;

async function hostRss(socket: string): Promise<number> {
  let lowest = Infinity;
  for (let i = 0; i < REST_SECONDS; i++) {
    const status = JSON.parse((await getBody('http://host/status?full', socket)).body);
    lowest = Math.min(
      lowest,
      status.processes.reduce((sum: number, w: { rss: number }) => sum + w.rss, 0),
    );
    await new Promise((r) => setTimeout(r, 1000));
  }
  return lowest;
}

/**
 * What a file holds past `from` bytes. host.log holds a line for every missing controller the scenarios asked for
 * before the reloads (over 512 MB in a default run: more than one string can hold); only the reloads' lines are read.
 */
function readFrom(path: string, from: number): string {
  const fd = openSync(path, 'r');
  try {
    const bytes = Buffer.alloc(statSync(path).size - from);
    let read = 0;
    while (read < bytes.length) {
      const n = readSync(fd, bytes, read, bytes.length - read, from + read);
      if (n === 0) break;
      read += n;
    }
    return bytes.toString('utf8', 0, read);
  } finally {
    closeSync(fd);
  }
}

/**
 * When the host installed each version, from its "Loaded controller" lines (host.log in JSON: times in ms)
 * written past `from` bytes, by the version hash the line names.
 */
function installedAt(hostLog: string, from: number): Map<string, number> {
  const times = new Map<string, number>();
  for (const line of readFrom(hostLog, from).split('\n')) {
    if (!line.startsWith('{')) continue;
    const { time, message } = JSON.parse(line) as { time: string; message: string };
    const version = /^Loaded controller Swap .*\(version ([0-9a-f]+), on reload\)$/.exec(message)?.[1];
    if (version) times.set(version, Date.parse(time));
  }
  return times;
}

const versionOf = (source: string) => createHash('sha256').update(source).digest('hex').slice(0, 12);

/** Reload latency under load, and the host's memory over many reloads. */
interface ReloadFigures {
  reloadP50Ms: number;
  reloadP99Ms: number;
  installedP50Ms: number;
  installedP99Ms: number;
  failedDuringReloads: number;
  /** The host's RSS at rest after the warm-up and after each window of reloads. */
  rssAtRestMb: number[];
  /** The median window's growth. */
  rssGrowthMb: number;
}

/**
 * Time from an atomic rename of a controller to the first answer from the new version, under load; and
 * to the host's having installed it, which leaves out the poll's own wait in the saturated front.
 * Then the host's RSS at rest over windows of reloads.
 */
async function reloadLatency(url: string, controllers: string, socket: string, hostLog: string): Promise<ReloadFigures> {
  const file = join(controllers, 'Swap.ts');
  const hostLogBefore = statSync(hostLog).size;
  writeFileSync(file, `export default () => ({ v: 0 });\n`);
  await getBody(`${url}/External/Swap`);
  const loadSeconds = Math.ceil(RELOADS_FOR_LATENCY * 0.15) + 3;
  const loadStarted = performance.now();
  const load = runLoad(url, ['/External/Echo?sn=1&no=1'], [200], loadSeconds);
  // Renames start once the load is steady: in wrk's first moments a request through the front took up
  // to 250 ms (measured), which is the load's start, not a reload.
  await new Promise((resolve) => setTimeout(resolve, LOAD_SETTLE_MS));
  const latencies: number[] = [];
  const renames: { version: string; at: number }[] = [];
  let failed = 0;
  for (let v = 1; v <= RELOADS_FOR_LATENCY; v++) {
    const source = `export default () => ({ v: ${v} });\n`;
    writeFileSync(`${file}.tmp`, source);
    const renamedAt = performance.now();
    renames.push({ version: versionOf(source), at: Date.now() });
    renameSync(`${file}.tmp`, file);
    for (;;) {
      const reply = await getBody(`${url}/External/Swap`).catch(() => ({ status: 0, body: '' }));
      if (reply.status !== 200) failed += 1;
      else if (JSON.parse(reply.body).v === v) break;
      if (performance.now() - renamedAt > 5000) throw new Error(`version ${v} not served after 5 s`);
    }
    latencies.push(performance.now() - renamedAt);
    await new Promise((r) => setTimeout(r, 100));
  }
  if (performance.now() - loadStarted > loadSeconds * 1000) throw new Error(`the reloads outlasted the ${loadSeconds} s load under them`);
  const underLoad = await load;
  const installed = installedAt(hostLog, hostLogBefore);
  const installLatencies = renames.map(({ version, at }) => {
    const time = installed.get(version);
    if (time === undefined) throw new Error(`no "Loaded controller Swap" line for version ${version} in ${hostLog}`);
    return time - at;
  });
  const reload = async (v: number) => {
    writeFileSync(
      `${file}.tmp`,
      `const state = Array.from({ length: 2000 }, (_, i) => 'v${v}-' + i + 'x'.repeat(90));\nexport default () => ({ v: ${v}, n: state.length });\n`,
    );
    renameSync(`${file}.tmp`, file);
    await getBody(`${url}/External/Swap`);
  };
  // The first reloads grow V8's code space and esbuild's buffers once: the baseline is taken after them,
  // so each window measures what 1,000 more reloads add (as in test/fixtures/reloadMemory.ts).
  for (let v = 0; v < RELOADS_WARM_UP; v++) await reload(-1 - v);
  const atRest = [await hostRss(socket)];
  for (let window = 0; window < RELOAD_MEMORY_WINDOWS; window++) {
    for (let v = 0; v < RELOADS_FOR_MEMORY; v++) await reload(window * RELOADS_FOR_MEMORY + v);
    atRest.push(await hostRss(socket));
  }
  const growths = atRest.slice(1).map((rss, i) => (rss - atRest[i]) / 2 ** 20);
  return {
    reloadP50Ms: median(latencies),
    reloadP99Ms: percentile(latencies, 99),
    installedP50Ms: median(installLatencies),
    installedP99Ms: percentile(installLatencies, 99),
    failedDuringReloads: failed + underLoad.unexpected + underLoad.errors,
    rssAtRestMb: atRest.map((rss) => rss / 2 ** 20),
    rssGrowthMb: median(growths),
  };
}

/** nginx's master and worker, by role. */
function nginxRole(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('master process') ? 'nginx master' : 'nginx worker';
}

/** The proxy processes that `extqs start` serves with by default on this machine (--proxy-workers' default). */
function defaultProxyWorkers(): number {
  const { default: text } = SETTINGS.proxyWorkers;
  return Number(typeof text === 'function' ? text(() => undefined, 'start') : text);
}

async function main(): Promise<void> {
  // Measured first, while nothing else runs: `extqs start --workers 2` as an operator starts it.
  process.stderr.write(`load generator: ${LOAD_GENERATOR}\n`);
  const scenarios = SCENARIOS.filter((scenario) => !ONLY || scenario.name.includes(ONLY));
  // BENCH_ONLY naming another part of the bench (`stack`): nothing to start here.
  if (scenarios.length === 0) return;
  const idle = ONLY ? undefined : await measureIdleStack(ROOT, 2);
  // Beside the default, the proxy's other shape: one process, or a primary and two workers where that is the default.
  const otherShape = ['--proxy-workers', defaultProxyWorkers() === 1 ? '2' : '1'];
  const idleOtherShape = ONLY ? undefined : await measureIdleStack(ROOT, 2, otherShape);
  const held = ONLY ? undefined : await measureHeldRequests(ROOT);
  const sandbox = makeSandbox();
  writeSite(sandbox);
  const socket = join(sandbox.dir, 'host.sock');
  const processes: Running[] = [];
  let nginx: ChildProcess | undefined;
  let nginxIdle: ProcessMemory[] | undefined;
  try {
    // host.log in JSON for its millisecond times (reloadLatency reads them).
    const host = await startCommand('host', [
      '--www',
      sandbox.www,
      '--logs',
      sandbox.logs,
      '--socket',
      socket,
      '--workers',
      WORKERS,
      '--log-format',
      'json',
    ]);
    processes.push(host);
    // Each front gets one process (nginx: one worker), and extqs also two proxy workers, for the scaling.
    const proxyArgs = (forwarder: string, logs: string, proxyWorkers = 1, upstream = socket) => {
      mkdirSync(logs, { recursive: true });
      return [
        '--port',
        '0',
        '--listen',
        '127.0.0.1',
        '--www',
        sandbox.www,
        '--logs',
        logs,
        '--upstream',
        `unix:${upstream}`,
        '--forwarder',
        forwarder,
        '--proxy-workers',
        String(proxyWorkers),
      ];
    };
    const proxy = await startCommand('proxy', proxyArgs('builtin', sandbox.logs));
    processes.push(proxy);
    const httpProxy = await startCommand('proxy', proxyArgs('http-proxy', join(sandbox.dir, 'logs-http-proxy')));
    processes.push(httpProxy);
    const twoWorkers = await startCommand('proxy', proxyArgs('builtin', join(sandbox.dir, 'logs-two-workers'), 2));
    processes.push(twoWorkers);
    const nodeFloor = await startNodeFloor(socket, sandbox.publicDir);
    processes.push(nodeFloor);
    const loggingFloor = await startNodeFloor(socket, sandbox.publicDir, join(sandbox.dir, 'logs-logging-floor'));
    processes.push(loggingFloor);
    // The host floor behind a proxy of its own, the same as the host's: each host is sent the same requests.
    const floorSocket = join(sandbox.dir, 'host-floor.sock');
    const hostFloor = await startNode(
      ['--import', 'tsx', join(ROOT, 'bench', 'hostFloor.ts'), floorSocket, sandbox.controllers],
      'hostFloor.ts',
    );
    processes.push(hostFloor);
    const floorProxy = await startCommand('proxy', proxyArgs('builtin', join(sandbox.dir, 'logs-host-floor'), 1, floorSocket));
    processes.push(floorProxy);
    const hostPid = host.child.pid!;
    const fronts: {
      name: 'extqs' | 'extqs-2-workers' | 'extqs-http-proxy' | 'node-floor' | 'logging-floor' | 'host-floor' | 'nginx';
      url: string;
      pid: number;
      /** The host behind it, whose CPU is counted as the host's. */
      hostPid: number;
    }[] = [
      { name: 'extqs', url: proxy.url, pid: proxy.child.pid!, hostPid },
      { name: 'extqs-2-workers', url: twoWorkers.url, pid: twoWorkers.child.pid!, hostPid },
      { name: 'extqs-http-proxy', url: httpProxy.url, pid: httpProxy.child.pid!, hostPid },
      { name: 'node-floor', url: nodeFloor.url, pid: nodeFloor.child.pid!, hostPid },
      { name: 'logging-floor', url: loggingFloor.url, pid: loggingFloor.child.pid!, hostPid },
      { name: 'host-floor', url: floorProxy.url, pid: floorProxy.child.pid!, hostPid: hostFloor.child.pid! },
    ];
    if (hasNginx()) {
      const nginxDir = join(sandbox.dir, 'nginx');
      mkdirSync(nginxDir);
      const started = await startNginx('nginx.conf', nginxDir, { SOCKET: socket, PUBLIC: sandbox.publicDir });
      nginx = started.child;
      fronts.push({ name: 'nginx', url: `http://127.0.0.1:${started.port}`, pid: started.child.pid!, hostPid });
      nginxIdle = memoryOfTree(started.child.pid!, nginxRole);
    } else {
      process.stderr.write('nginx is not on PATH (Debian: nginx-light): extqs only, no ratios\n');
    }

    const results: Record<string, Record<string, (LoadResult & { cpuMicrosPerRequest: number; hostCpuMicrosPerRequest: number })[]>> = {};
    for (const scenario of scenarios) {
      results[scenario.name] = {};
      const expectedOf = (front: (typeof fronts)[number]) => scenario.expected[front.name === 'nginx' ? 'nginx' : 'extqs'];
      const taking = fronts.filter(
        (front) =>
          !(scenario.compressed && (front.name === 'node-floor' || front.name === 'logging-floor')) &&
          (front.name !== 'host-floor' || scenario.hostFloor),
      );
      for (const front of taking) await runLoad(front.url, scenario.paths, expectedOf(front), 1, 50, scenario.headers); // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        for (const front of taking) {
          const cpuBefore = cpuMicros(front.pid);
          const hostCpuBefore = cpuMicros(front.hostPid);
          const load = await runLoad(front.url, scenario.paths, expectedOf(front), SECONDS, 50, scenario.headers);
          const result = {
            ...load,
            cpuMicrosPerRequest: (cpuMicros(front.pid) - cpuBefore) / Math.max(load.total, 1),
            hostCpuMicrosPerRequest: (cpuMicros(front.hostPid) - hostCpuBefore) / Math.max(load.total, 1),
          };
          (results[scenario.name][front.name] ??= []).push(result);
          process.stderr.write(`${scenario.name} / ${front.name} round ${round + 1}: ${Math.round(result.requestsPerSecond)} req/s\n`);
        }
      }
    }
    const reload = ONLY ? undefined : await reloadLatency(proxy.url, sandbox.controllers, socket, join(sandbox.logs, 'host.log'));

    const rows = scenarios.map((scenario) => {
      const summary = (front: string) => {
        const runs = results[scenario.name][front];
        if (!runs) return undefined;
        return {
          requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
          p50: median(runs.map((r) => r.p50)),
          p99: median(runs.map((r) => r.p99)),
          unexpected: runs.reduce((s, r) => s + r.unexpected, 0),
          errors: runs.reduce((s, r) => s + r.errors + r.timeouts, 0),
          cpuMicrosPerRequest: median(runs.map((r) => r.cpuMicrosPerRequest)),
          hostCpuMicrosPerRequest: median(runs.map((r) => r.hostCpuMicrosPerRequest)),
        };
      };
      const extqs = summary('extqs')!;
      const twoProxyWorkers = summary('extqs-2-workers')!;
      const viaHttpProxy = summary('extqs-http-proxy')!;
      const floor = summary('node-floor');
      const loggingFloor = summary('logging-floor');
      const hostFloorSummary = summary('host-floor');
      const hostFloorRatio = hostFloorSummary && extqs.hostCpuMicrosPerRequest / hostFloorSummary.hostCpuMicrosPerRequest;
      const nginxSummary = summary('nginx');
      const ratio = nginxSummary ? extqs.requestsPerSecond / nginxSummary.requestsPerSecond : undefined;
      const cpuRatio = nginxSummary ? extqs.cpuMicrosPerRequest / nginxSummary.cpuMicrosPerRequest : undefined;
      return {
        scenario: scenario.name,
        target: scenario.target,
        extqs,
        twoProxyWorkers,
        // What one 16-core machine would carry on this path, from CPU alone: the front with workers (their
        // log relay included) and the host each take their CPU per request, and nothing else runs.
        sixteenCores: SIXTEEN_CORES_US / (twoProxyWorkers.cpuMicrosPerRequest + twoProxyWorkers.hostCpuMicrosPerRequest),
        httpProxy: viaHttpProxy,
        nodeFloor: floor,
        /** extqs's CPU per request above the Node floor's, in µs. */
        floorGap: floor && extqs.cpuMicrosPerRequest - floor.cpuMicrosPerRequest,
        loggingFloor,
        /** extqs's CPU per request above the logging floor's, in µs (target: FLOOR_GAP_TARGET_US). */
        loggingFloorGap: loggingFloor && extqs.cpuMicrosPerRequest - loggingFloor.cpuMicrosPerRequest,
        loggingFloorGapMet: loggingFloor && extqs.cpuMicrosPerRequest - loggingFloor.cpuMicrosPerRequest <= FLOOR_GAP_TARGET_US,
        /** Of that gap, what the legacy's answers and lines cost a front at the least (the logging floor above the floor). */
        loggingGap: floor && loggingFloor && loggingFloor.cpuMicrosPerRequest - floor.cpuMicrosPerRequest,
        /** The host floor's figures behind its own proxy: its CPU is `hostCpuMicrosPerRequest`. */
        hostFloor: hostFloorSummary,
        hostFloorRatio,
        hostFloorMet: hostFloorRatio === undefined ? undefined : hostFloorRatio <= HOST_FLOOR_TARGET,
        nginx: nginxSummary,
        ratio,
        cpuRatio,
        httpProxyRatio: nginxSummary ? viaHttpProxy.requestsPerSecond / nginxSummary.requestsPerSecond : undefined,
        met: ratio === undefined || scenario.target === undefined ? undefined : ratio >= scenario.target,
        cpuMet: cpuRatio === undefined ? undefined : cpuRatio <= CPU_TARGET,
      };
    });

    const verdict = (met: boolean | undefined) => (met === undefined ? '' : met ? ' ok' : ' MISS');
    const fixed = (n: number | undefined, digits = 2) => (n === undefined ? '-' : n.toFixed(digits));
    const pad = (text: string, width: number) => text.padEnd(width);
    const memory = (processes: readonly ProcessMemory[], role?: string) =>
      `${totalMb(processes, 'rssMb', role).toFixed(0)}/${totalMb(processes, 'pssMb', role).toFixed(0)}`;
    const lines = [
      `load generator ${LOAD_GENERATOR}, 50 connections, ${ROUNDS} rounds of ${SECONDS} s per front, medians`,
      `${pad('scenario', 24)}${pad('CPU us/req extqs/nginx', 24)}${pad('extqs req/s', 13)}${pad('nginx req/s', 13)}${pad('ratio', 17)}${pad('p50/p99 ms', 14)}${pad('unexp/err', 11)}${pad('host us/req (floor)', 28)}${pad('Node floor (extqs +)', 32)}${pad(`logging floor (extqs +, <= ${FLOOR_GAP_TARGET_US})`, 34)}${pad('2 proxy workers', 24)}${pad('16 cores', 12)}http-proxy engine`,
      ...rows.map(
        (r) =>
          `${pad(r.scenario, 24)}` +
          `${pad(`${Math.round(r.extqs.cpuMicrosPerRequest)}/${r.nginx ? Math.round(r.nginx.cpuMicrosPerRequest) : '-'} (${fixed(r.cpuRatio)}x${verdict(r.cpuMet)})`, 24)}` +
          `${pad(String(Math.round(r.extqs.requestsPerSecond)), 13)}${pad(r.nginx ? String(Math.round(r.nginx.requestsPerSecond)) : '-', 13)}` +
          `${pad(`${fixed(r.ratio)}${r.target === undefined ? '' : ` >=${r.target}${verdict(r.met)}`}`, 17)}` +
          `${pad(`${fixed(r.extqs.p50, 1)}/${fixed(r.extqs.p99, 1)}`, 14)}${pad(`${r.extqs.unexpected}/${r.extqs.errors}`, 11)}` +
          `${pad(`${Math.round(r.extqs.hostCpuMicrosPerRequest)}${r.hostFloor ? ` (${Math.round(r.hostFloor.hostCpuMicrosPerRequest)}, ${fixed(r.hostFloorRatio)}x${verdict(r.hostFloorMet)})` : ''}`, 28)}` +
          `${pad(r.nodeFloor ? `${Math.round(r.nodeFloor.cpuMicrosPerRequest)} us/req (+${Math.round(r.floorGap!)}), ${Math.round(r.nodeFloor.requestsPerSecond)} req/s` : '-', 32)}` +
          `${pad(r.loggingFloor ? `${Math.round(r.loggingFloor.cpuMicrosPerRequest)} us/req (+${Math.round(r.loggingFloorGap!)}${verdict(r.loggingFloorGapMet)})` : '-', 34)}` +
          `${pad(`${Math.round(r.twoProxyWorkers.cpuMicrosPerRequest)} us/req, ${Math.round(r.twoProxyWorkers.requestsPerSecond)} req/s`, 24)}` +
          `${pad(`${Math.round(r.sixteenCores / 1000)}k req/s`, 12)}` +
          `${Math.round(r.httpProxy.cpuMicrosPerRequest)} us/req, ${Math.round(r.httpProxy.requestsPerSecond)} req/s`,
      ),
      ...(reload && idle && idleOtherShape && held
        ? [...reloadAndIdleLines(reload, idle, idleOtherShape), heldLine(held)]
        : [`BENCH_ONLY=${ONLY}: no reload or idle measurements`]),
    ];
    function reloadAndIdleLines(reload: ReloadFigures, idle: IdleStack, idleOtherShape: IdleStack): string[] {
      const idleAll = totalMb(idle.processes, 'rssMb');
      const idleLauncher = totalMb(idle.processes, 'rssMb', 'launcher');
      return [
        `reload latency to the first new answer p50 ${reload.reloadP50Ms.toFixed(1)} ms, p99 ${reload.reloadP99Ms.toFixed(1)} ms (target ${RELOAD_P99_TARGET_MS}${verdict(reload.reloadP99Ms <= RELOAD_P99_TARGET_MS)}); ` +
          `to the new version installed p50 ${reload.installedP50Ms.toFixed(1)} ms, p99 ${reload.installedP99Ms.toFixed(1)} ms; failed requests ${reload.failedDuringReloads} (target 0)`,
        `host RSS at rest ${reload.rssAtRestMb.map((mb) => mb.toFixed(1)).join(' -> ')} MB, every ${RELOADS_FOR_MEMORY} reloads: median growth ${reload.rssGrowthMb.toFixed(1)} MB (target 10${verdict(reload.rssGrowthMb <= RELOAD_GROWTH_TARGET_MB)})`,
        ...(
          [
            ['', idle],
            [` ${otherShape.join(' ')}`, idleOtherShape],
          ] as const
        ).map(
          ([args, stack]) =>
            `idle RSS/PSS MB, extqs start --workers 2${args} (ready in ${Math.round(stack.readyMs)} ms): ` +
            IDLE_ROLES.map((role) => `${role} ${memory(stack.processes, role)}`).join(', ') +
            `; all ${memory(stack.processes)}`,
        ),
        `idle targets, default stack: all ${IDLE_TARGETS_MB.all}${verdict(idleAll <= IDLE_TARGETS_MB.all)}, launcher ${IDLE_TARGETS_MB.launcher}${verdict(idleLauncher <= IDLE_TARGETS_MB.launcher)}`,
        nginxIdle ? `idle RSS/PSS MB, nginx (1 worker): ${memory(nginxIdle)}` : 'nginx: not measured',
      ];
    }
    function heldLine(held: HeldRequests): string {
      return (
        `memory per request in flight (${held.held} held in an await, extqs start defaults): PSS ${held.beforePssMb.toFixed(0)} -> ` +
        `${held.duringPssMb.toFixed(0)} MB, ${held.pssKbPerRequest.toFixed(1)} KB a request`
      );
    }
    process.stdout.write(`\n${lines.join('\n')}\n`);
    const out = join(ROOT, 'bench', 'results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(
      out,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          node: process.version,
          loadGenerator: LOAD_GENERATOR,
          seconds: SECONDS,
          rounds: ROUNDS,
          workers: WORKERS,
          rows,
          reload,
          heldRequests: held,
          idle: { extqs: idle, extqsOtherShape: idleOtherShape && { args: otherShape, ...idleOtherShape }, nginx: nginxIdle },
          raw: results,
        },
        null,
        2,
      ),
    );
    process.stdout.write(`\nwritten to ${out}\n`);
  } finally {
    if (nginx) await stopNginx(nginx);
    for (const p of processes.reverse()) await p.stop();
    sandbox.remove();
  }
}

await main();
