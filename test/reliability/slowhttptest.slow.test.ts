// slowhttptest (Debian package `slowhttptest`, installed by .ci/run) against the proxy on 127.0.0.1:
// slowloris (-H) and slow body (-B), 500 connections for 30 s each, with the default limits. Meanwhile
// this test sends an ordinary request every 200 ms; every one must be answered as usual, and
// slowhttptest's own probe must find the service available for the whole run.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { makeSandbox, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

const CONNECTIONS = 500;
const SECONDS = 30;
const PROBE_EVERY_MS = 200;
/**
 * The attacks' target: a controller that waits for the whole body. The host reads a form body before it
 * runs one, a JSON body only when the controller asks; a missing controller is answered at once, and
 * its slow connections close within a second.
 */
const TARGET = 'Receive';
const ORDINARY = [
  { path: '/favicon.ico', status: 404 },
  { path: '/External/Latest?sn=123&no=1', status: 500 },
  { path: '/External/Alarm?all_alarm&all', status: 500 },
];

interface Attack {
  /** slowhttptest's CSV: one row a second, "Service Available" > 0 when its probe got an answer. */
  rows: { second: number; closed: number; pending: number; connected: number; available: boolean }[];
  summary: string;
  ordinary: { path: string; status: number | string }[];
}

async function attack(stack: Running, sandbox: Sandbox, mode: '-H' | '-B', extra: string[] = []): Promise<Attack> {
  const port = new URL(stack.url).port;
  const prefix = join(sandbox.dir, `slowhttptest${mode}`);
  const tool = spawn(
    'slowhttptest',
    [
      mode,
      '-c',
      String(CONNECTIONS),
      '-r',
      '200',
      '-i',
      '10',
      '-l',
      String(SECONDS),
      '-p',
      '3',
      '-g',
      '-o',
      prefix,
      ...extra,
      '-u',
      `http://127.0.0.1:${port}/External/${TARGET}`,
    ],
    { cwd: sandbox.dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  tool.stdout.on('data', (chunk) => (output += chunk));
  tool.stderr.on('data', (chunk) => (output += chunk));
  const exited = once(tool, 'exit');
  const killer = setTimeout(() => tool.kill('SIGKILL'), (SECONDS + 30) * 1000);
  let done = false;
  void exited.then(() => (done = true));

  const ordinary: Attack['ordinary'] = [];
  for (let i = 0; !done && i < ((SECONDS + 30) * 1000) / PROBE_EVERY_MS; i++) {
    const { path } = ORDINARY[i % ORDINARY.length];
    const status = await get(stack.url, path).then(
      (reply) => reply.status,
      (err: Error) => err.message,
    );
    ordinary.push({ path, status });
    await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
  }
  const [code] = await exited;
  clearTimeout(killer);
  expect(code, `slowhttptest exited with ${code}: ${output}`).to.equal(0);

  const rows = readFileSync(`${prefix}.csv`, 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => line.split(',').map(Number))
    .map(([second, closed, pending, connected, available]) => ({ second, closed, pending, connected, available: available > 0 }));
  // eslint-disable-next-line no-control-regex
  const plain = output.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
  const summary = /Test ended on (\d+)th second\s+Exit status: ([^\n]+)/.exec(plain)?.slice(1).join(' s, ') ?? plain.slice(-300);
  return { rows, summary, ordinary };
}

/** The most slow connections open at once: an attack that opened few proves nothing about availability. */
function peakConnected(result: Attack): number {
  return Math.max(...result.rows.map((r) => r.connected));
}

function report(name: string, result: Attack): void {
  const peak = peakConnected(result);
  const statuses = result.ordinary.reduce<Record<string, number>>(
    (acc, r) => ((acc[String(r.status)] = (acc[String(r.status)] ?? 0) + 1), acc),
    {},
  );
  const available = result.rows.filter((r) => r.available).length;
  process.stdout.write(
    `      ${name}: ${result.rows.length} s recorded, peak ${peak} slow connections open, service available ${available}/${result.rows.length} s; ` +
      `ordinary requests ${JSON.stringify(statuses)}; ended: ${result.summary}\n`,
  );
}

describe('slowhttptest against the proxy (500 connections, 30 s)', function () {
  this.timeout((SECONDS + 60) * 1000);
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    const found = spawnSync('slowhttptest', ['-h'], { encoding: 'utf8' });
    if (found.error) throw new Error('slowhttptest is not installed (Debian package slowhttptest; .ci/run installs it)');
    sandbox = makeSandbox();
    writeFileSync(
      join(sandbox.controllers, `${TARGET}.ts`),
      `export default async ({ body }) => ({ length: (await body.text()).length });\n`,
    );
    stack = await startStack(sandbox);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  function expectServed(result: Attack): void {
    // At least two a second of the run (a run ends early when the proxy has answered every slow request).
    expect(result.ordinary.length).to.be.at.least(result.rows.length * 2);
    const wrong = result.ordinary.filter((r) => r.status !== ORDINARY.find((o) => o.path === r.path)!.status);
    expect(wrong).to.deep.equal([]);
    expect(result.rows.length).to.be.greaterThan(0);
    expect(result.rows.filter((r) => !r.available)).to.deep.equal([]);
    expect(stack.stderr()).to.not.match(/proxy \(pid \d+\) exited/);
    // Last, so an unavailable service is reported as such; first, it would read as a weak attack.
    expect(peakConnected(result), 'slow connections open at the peak').to.be.greaterThan(CONNECTIONS / 2);
  }

  it('slowloris (-H): ordinary requests are answered and the service stays available', async function () {
    const result = await attack(stack, sandbox, '-H');
    report('slowloris', result);
    expectServed(result);
  });

  it('slow body (-B, form data): ordinary requests are answered and the service stays available', async function () {
    const result = await attack(stack, sandbox, '-B');
    report('slow body (form)', result);
    expectServed(result);
  });

  it('slow body (-B, JSON the host waits for): ordinary requests are answered and the service stays available', async function () {
    const result = await attack(stack, sandbox, '-B', ['-f', 'application/json']);
    report('slow body (JSON)', result);
    expectServed(result);
  });
});
