// What --follow-symlinks costs a static request the cache does not hold: the guard's check before send
// opens the file (one realpath when no link is crossed; an lstat a component and a realpath and stat a
// link when one is) and the look at the opened descriptor (/proc/self/fd). A cached file and a loaded
// controller run no check: their entries were judged when read. Prints µs per call; `npm run bench:links`.
import { closeSync, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { LinkGuard } from '../common/linkGuard.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
/** Requests in flight at once, as under load (the async check runs on libuv's thread pool). */
const CONCURRENCY = 50;

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'extqs-bench-links-')));
const root = join(dir, 'public');
mkdirSync(join(root, 'css', 'site'), { recursive: true });
writeFileSync(join(root, 'favicon.ico'), 'x');
writeFileSync(join(root, 'css', 'site', 'main.css'), 'x');
symlinkSync('favicon.ico', join(root, 'alias.ico'));

async function perCall(what: string, call: () => unknown): Promise<void> {
  for (let i = 0; i < 1000; i++) await call(); // warm-up
  let started = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) await call();
  const sequential = Number(process.hrtime.bigint() - started) / CALLS / 1000;
  started = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i += CONCURRENCY) await Promise.all(Array.from({ length: CONCURRENCY }, call));
  const concurrent = Number(process.hrtime.bigint() - started) / CALLS / 1000;
  console.log(
    `${what.padEnd(52)} ${sequential.toFixed(2).padStart(7)} µs one at a time, ${concurrent.toFixed(2).padStart(6)} µs each with ${CONCURRENCY} in flight`,
  );
}

const owner = new LinkGuard(root, 'owner');
const on = new LinkGuard(root, 'on');
console.log(`node ${process.version}, ${CALLS} calls each`);
// For scale: send stats, opens, reads and closes the file of every request it serves from disk.
await perCall('for scale: one fs stat (send does it per request)', () => stat(join(root, 'favicon.ico')));
await perCall('on: check (no I/O; staticFiles skips even the call)', () => on.check(join(root, 'favicon.ico')));
await perCall('owner: check /favicon.ico (no link)', () => owner.check(join(root, 'favicon.ico')));
await perCall('owner: check /css/site/main.css (no link)', () => owner.check(join(root, 'css', 'site', 'main.css')));
await perCall('owner: check /alias.ico (a link, followed)', () => owner.check(join(root, 'alias.ico')));
await perCall('owner: check /missing.ico (first miss)', () => owner.check(join(root, 'missing.ico')));
const file = join(root, 'favicon.ico');
const verdict = await owner.check(file);
const fd = openSync(file, 'r');
await perCall('owner: the opened descriptor (readlink /proc/self/fd)', () => owner.openedAs(fd, file, verdict));
closeSync(fd);
rmSync(dir, { recursive: true, force: true });
