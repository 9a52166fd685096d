// `npm run bench:tls`: the bench's scenarios over HTTPS and HTTP/2, driven by h2load (Debian's
// nghttp2-client: 50 connections, 10 streams each, asking for gzip and brotli), through an extqs proxy
// (one process) and through nginx configured the same way (bench/nginx-tls.conf: one worker, TLS 1.2/1.3,
// http2, gzip on), both in front of the same host, interleaved so drift cancels; and through the same extqs
// listener over HTTP/1.1 (h2load --h1, 50 connections, one request at a time each), the yardstick for what
// HTTP/2 adds. Prints CPU µs per request and req/s for each, with their ratios, and writes
// bench/results/tls-<time>.json.
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeCertificate } from '../tools/certificate.ts';
import { makeSandbox } from '../tools/sandbox.ts';
import { cpuMicros, median } from './measure.ts';
import { hasNginx, startNginx, stopNginx } from './nginx.ts';
import { ROOT, startCommand, type Running } from './processes.ts';
import { OBSERVED_SCENARIOS, writeSite } from './scenarios.ts';

/**
 * Requests a round (h2load's count mode). Its timed mode (-D) never ends when a connection is still in its
 * handshake as the time runs out, which a busy single-process front makes likely (seen here at 50 connections).
 */
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 25_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Only the scenarios whose name holds this text, for a quick look (as for bench/run.ts). */
const ONLY = process.env.BENCH_ONLY;
const CONNECTIONS = 50;
const STREAMS_PER_CONNECTION = 10;

interface H2Result {
  requestsPerSecond: number;
  done: number;
  /** Answers by status class (`2xx` …), as h2load counts them. */
  classes: Record<string, number>;
  /** Requests that got no answer (h2load's "errored" and "timeout"; its "failed" also counts 4xx and 5xx). */
  unanswered: number;
}

/** h2load over HTTP/2, or over HTTP/1.1 (`h1`: ALPN http/1.1, no pipelining) on the same TLS listener. */
function h2load(urls: string[], requests: number, protocol: 'h2' | 'h1' = 'h2'): Promise<H2Result> {
  const args = [
    '-n',
    String(requests),
    '-c',
    String(CONNECTIONS),
    '-m',
    protocol === 'h2' ? String(STREAMS_PER_CONNECTION) : '1',
    '-t',
    '1',
  ];
  if (protocol === 'h1') args.push('--h1');
  args.push('-H', 'Accept-Encoding: gzip, br', ...urls);
  return new Promise((resolve, reject) =>
    execFile('h2load', args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout) => {
      if (err) return reject(new Error(`h2load failed: ${err.message}\n${stdout}`));
      const rate = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(stdout);
      const requests = /requests: \d+ total, \d+ started, (\d+) done, \d+ succeeded, \d+ failed, (\d+) errored, (\d+) timeout/.exec(stdout);
      const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(stdout);
      const negotiated = protocol === 'h2' ? /Application protocol: h2/ : /Application protocol: http\/1\.1/;
      if (!rate || !requests || !codes || !negotiated.test(stdout)) return reject(new Error(`h2load said:\n${stdout}`));
      resolve({
        requestsPerSecond: Number(rate[1]),
        done: Number(requests[1]),
        unanswered: Number(requests[2]) + Number(requests[3]),
        classes: { '2xx': Number(codes[1]), '3xx': Number(codes[2]), '4xx': Number(codes[3]), '5xx': Number(codes[4]) },
      });
    }),
  );
}

/** Answers outside the statuses the scenario expects, by class (h2load counts no finer). */
function unexpected(result: H2Result, statuses: number[]): number {
  const allowed = new Set(statuses.map((status) => `${Math.floor(status / 100)}xx`));
  return Object.entries(result.classes).reduce((sum, [cls, n]) => sum + (allowed.has(cls) ? 0 : n), 0) + result.unanswered;
}

async function main(): Promise<void> {
  const scenarios = OBSERVED_SCENARIOS.filter((candidate) => !ONLY || candidate.name.includes(ONLY));
  // BENCH_ONLY naming another part of the bench (`stack`): nothing to start here.
  if (scenarios.length === 0) return;
  if (!hasNginx()) process.stderr.write('nginx is not on PATH (Debian: nginx-light): extqs only, no ratios\n');
  const sandbox = makeSandbox();
  writeSite(sandbox);
  const pair = makeCertificate(sandbox.dir);
  const socket = join(sandbox.dir, 'host.sock');
  const processes: Running[] = [];
  let nginx: ChildProcess | undefined;
  try {
    processes.push(await startCommand('host', ['--www', sandbox.www, '--logs', sandbox.logs, '--socket', socket, '--workers', '1']));
    const proxy = await startCommand('proxy', [
      ...['--port', '0', '--listen', '127.0.0.1', '--www', sandbox.www, '--logs', sandbox.logs, '--upstream', `unix:${socket}`],
      ...['--proxy-workers', '1', '--tls-port', '0', '--tls-cert', pair.cert, '--tls-key', pair.key],
    ]);
    processes.push(proxy);
    const fronts: { name: 'extqs' | 'extqs-h1' | 'nginx'; url: string; pid: number; protocol: 'h2' | 'h1' }[] = [
      { name: 'extqs', url: proxy.tlsUrl!, pid: proxy.child.pid!, protocol: 'h2' },
      { name: 'extqs-h1', url: proxy.tlsUrl!, pid: proxy.child.pid!, protocol: 'h1' },
    ];
    if (hasNginx()) {
      const dir = join(sandbox.dir, 'nginx');
      mkdirSync(dir);
      const started = await startNginx('nginx-tls.conf', dir, {
        SOCKET: socket,
        PUBLIC: sandbox.publicDir,
        CERT: pair.cert,
        KEY: pair.key,
      });
      nginx = started.child;
      fronts.push({ name: 'nginx', url: `https://127.0.0.1:${started.port}`, pid: started.child.pid!, protocol: 'h2' });
    }

    const rows = [];
    for (const scenario of scenarios) {
      const runs: Record<string, { requestsPerSecond: number; cpuMicrosPerRequest: number; unexpected: number }[]> = {};
      for (const front of fronts)
        await h2load(
          scenario.paths.map((path) => front.url + path),
          REQUESTS / 10,
          front.protocol,
        ); // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        for (const front of fronts) {
          const cpuBefore = cpuMicros(front.pid);
          const result = await h2load(
            scenario.paths.map((path) => front.url + path),
            REQUESTS,
            front.protocol,
          );
          (runs[front.name] ??= []).push({
            requestsPerSecond: result.requestsPerSecond,
            cpuMicrosPerRequest: (cpuMicros(front.pid) - cpuBefore) / Math.max(result.done, 1),
            unexpected: unexpected(result, scenario.expected[front.name === 'nginx' ? 'nginx' : 'extqs']),
          });
          process.stderr.write(
            `${front.protocol} ${scenario.name} / ${front.name} round ${round + 1}: ${Math.round(result.requestsPerSecond)} req/s\n`,
          );
        }
      }
      const summary = (name: string) =>
        runs[name] && {
          requestsPerSecond: median(runs[name].map((r) => r.requestsPerSecond)),
          cpuMicrosPerRequest: median(runs[name].map((r) => r.cpuMicrosPerRequest)),
          unexpected: runs[name].reduce((sum, r) => sum + r.unexpected, 0),
        };
      const extqs = summary('extqs');
      const http1 = summary('extqs-h1');
      const nginxSummary = summary('nginx');
      rows.push({
        scenario: scenario.name,
        extqs,
        extqsHttp1: http1,
        /** HTTP/2's CPU per request over HTTP/1.1's, both over TLS to the same extqs listener (target ≤ 1.15). */
        http2OverHttp1: extqs.cpuMicrosPerRequest / http1.cpuMicrosPerRequest,
        nginx: nginxSummary,
        ratio: nginxSummary && extqs.requestsPerSecond / nginxSummary.requestsPerSecond,
        cpuRatio: nginxSummary && extqs.cpuMicrosPerRequest / nginxSummary.cpuMicrosPerRequest,
      });
    }

    const pad = (text: string, width: number) => text.padEnd(width);
    const fixed = (n: number | undefined) => (n === undefined ? '-' : n.toFixed(2));
    const lines = [
      `HTTPS + HTTP/2 (h2load -c ${CONNECTIONS} -m ${STREAMS_PER_CONNECTION}, gzip and br asked), ${ROUNDS} rounds of ${REQUESTS} requests, medians`,
      `${pad('scenario', 24)}${pad('CPU us/req extqs/nginx', 26)}${pad('h2/h1 extqs', 20)}${pad('extqs req/s', 13)}${pad('nginx req/s', 13)}${pad('ratio', 8)}unexpected`,
      ...rows.map(
        (r) =>
          `${pad(r.scenario, 24)}${pad(`${Math.round(r.extqs.cpuMicrosPerRequest)}/${r.nginx ? Math.round(r.nginx.cpuMicrosPerRequest) : '-'} (${fixed(r.cpuRatio)}x)`, 26)}` +
          `${pad(`${Math.round(r.extqsHttp1.cpuMicrosPerRequest)} us (${fixed(r.http2OverHttp1)}x)`, 20)}` +
          `${pad(String(Math.round(r.extqs.requestsPerSecond)), 13)}${pad(r.nginx ? String(Math.round(r.nginx.requestsPerSecond)) : '-', 13)}` +
          `${pad(fixed(r.ratio), 8)}${r.extqs.unexpected + r.extqsHttp1.unexpected}/${r.nginx?.unexpected ?? '-'}`,
      ),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    const resultsDir = join(ROOT, 'bench', 'results');
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `tls-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify({ node: process.version, requests: REQUESTS, rounds: ROUNDS, rows }, null, 2));
    process.stdout.write(`results: ${file}\n`);
    // nginx's own misses are shown, not judged: the bench checks extqs.
    if (rows.some((r) => r.extqs.unexpected + r.extqsHttp1.unexpected > 0)) process.exitCode = 1;
  } finally {
    if (nginx) await stopNginx(nginx);
    for (const running of processes.reverse()) await running.stop();
    sandbox.remove();
  }
}

await main();
