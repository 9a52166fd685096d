// `npm run bench:body`: the resident memory of the proxy, the host and its worker while a large request body
// (BODY_GB, default 2) streams through `extqs start` (engine: FORWARDER, default builtin) to a controller that
// reads it and to one that ignores it. Both must stay flat: no process may hold a body in memory. Prints RSS
// before, peak and after, per role, and writes bench/results/body-<time>.json.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseReadyLine } from '../common/ready.ts';
import { makeSandbox } from '../tools/sandbox.ts';
import { descendants, roleOf, ROOT, rssMb } from './processes.ts';

const BODY_BYTES = Number(process.env.BODY_GB ?? 2) * 1024 ** 3;
const CHUNK = Buffer.alloc(256 * 1024, 'x');
const SAMPLE_MS = 100;
const forwarder = process.env.FORWARDER ?? 'builtin';

const tree = makeSandbox();
writeFileSync(
  join(tree.controllers, 'Reads.ts'),
  `export default async ({ body }: any) => { let n = 0; for await (const c of body.stream()) n += c.length; return { read: n }; };\n`,
);
writeFileSync(join(tree.controllers, 'Ignores.ts'), `export default () => ({ read: 0 });\n`);

const launcher = spawn(
  process.execPath,
  [
    join(ROOT, 'bin/extqs.js'),
    'start',
    ...['--port', '0', '--listen', '127.0.0.1', '--workers', '1', '--www', tree.www, '--logs', tree.logs],
    // No body limit, no form limit, and time enough for the body: the point is memory.
    ...['--forwarder', forwarder],
    ...['--limit-request-body', '0', '--post-max-size', '0', '--request-timeout', '3600', '--max-execution-time', '0'],
  ],
  { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
);
const url = await new Promise<string>((resolve) =>
  createInterface({ input: launcher.stdout }).on('line', (line) => {
    const ready = parseReadyLine(line);
    if (ready) resolve(ready);
  }),
);

function footprint(): Record<string, number> {
  const rss: Record<string, number> = {};
  for (const pid of descendants(launcher.pid!)) {
    try {
      const role = roleOf(pid);
      rss[role] = (rss[role] ?? 0) + rssMb(pid);
    } catch {
      // gone between the listing and the reading (a short-lived helper)
    }
  }
  return rss;
}

/** POSTs BODY_BYTES to `path`, sampling every process's RSS meanwhile. */
async function run(path: string) {
  const before = footprint();
  const peak = { ...before };
  const sampler = setInterval(() => {
    for (const [role, mb] of Object.entries(footprint())) peak[role] = Math.max(peak[role] ?? 0, mb);
  }, SAMPLE_MS);
  const started = performance.now();
  const { hostname, port } = new URL(url);
  // A raw connection: it sends the whole body whatever the answer, as a client with a slow upload does (Node's
  // http client stops sending once an early answer has come).
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    let allSent = false;
    /** The status line and body once the whole answer is in (it has a Content-Length). */
    const complete = () => {
      const head = received.indexOf('\r\n\r\n');
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(received)?.[1] ?? NaN);
      return head !== -1 && received.length - head - 4 >= length
        ? `${received.split('\r\n', 1)[0]} ${received.slice(head + 4)}`
        : undefined;
    };
    const finishIfDone = () => {
      const done = complete();
      if (done && allSent) {
        socket.end();
        resolve(done);
      }
    };
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      received += chunk;
      finishIfDone();
    });
    socket.on('error', reject);
    socket.on('close', () => (complete() && allSent ? undefined : reject(new Error(`closed early: ${received.slice(0, 200)}`))));
    socket.write(`POST ${path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/octet-stream\r\nContent-Length: ${BODY_BYTES}\r\n\r\n`);
    let sent = 0;
    const write = () => {
      while (sent < BODY_BYTES) {
        const piece = CHUNK.subarray(0, Math.min(CHUNK.length, BODY_BYTES - sent));
        sent += piece.length;
        const last = sent === BODY_BYTES;
        const flushed = socket.write(piece, last ? () => ((allSent = true), finishIfDone()) : undefined);
        if (!flushed && !last) return void socket.once('drain', write);
      }
    };
    write();
  });
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const after = footprint();
  const round = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v)]));
  return { path, answer, seconds: Number(seconds.toFixed(1)), rssMb: { before: round(before), peak: round(peak), after: round(after) } };
}

try {
  const results = [await run('/External/Reads'), await run('/External/Ignores')];
  // A worker that died meanwhile would make the figures meaningless: say so.
  const hostErrors = readFileSync(join(tree.logs, 'host.log'), 'utf8')
    .split('\n')
    .filter((line) => line.includes('[error]'));
  const report = JSON.stringify({ node: process.version, forwarder, bodyBytes: BODY_BYTES, results, hostErrors }, null, 1);
  const file = join(ROOT, 'bench/results', `body-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${report}\n`);
  console.log(`${report}\n${file}`);
} finally {
  launcher.kill('SIGTERM');
  await once(launcher, 'exit');
  tree.remove();
}
