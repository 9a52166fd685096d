import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { FLUSH_WINDOW, openLineLog } from '../../common/lineLog.ts';
import { eventually } from '../helpers/stack.ts';

describe('a line log', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'extqs-linelog-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('has every line on disk, in order, once drain() resolves after a burst under backpressure', async () => {
    const log = openLineLog(dir, 'burst.log');
    const total = 50_000;
    // Bursts of 500 lines a turn fill winston's buffers; drain() used to end the file under them
    // ("write after end") and lose the rest.
    for (let i = 0; i < total;) {
      for (let k = 0; k < 500; k++, i++) log.write(`line ${i}`);
      await new Promise((r) => setImmediate(r));
    }
    await log.drain();
    const lines = readFileSync(join(dir, 'burst.log'), 'utf8').split('\n').filter(Boolean);
    expect(lines.length).to.equal(total);
    expect(lines[0]).to.equal('line 0');
    expect(lines[total - 1]).to.equal(`line ${total - 1}`);
    expect(lines.every((line, i) => line === `line ${i}`)).to.equal(true);
  });

  it("writes a window's lines together: none before the window is full, all of them once it is", async () => {
    const log = openLineLog(dir, 'window.log', undefined, { ms: 60_000, lines: 3 });
    const read = () => readFileSync(join(dir, 'window.log'), 'utf8');
    log.write('line 1');
    await new Promise((r) => setImmediate(r));
    log.write('line 2');
    await new Promise((r) => setImmediate(r));
    expect(read()).to.equal('');
    log.write('line 3');
    // Long before the minute: the third line filled the window.
    await eventually(() => (read() === 'line 1\nline 2\nline 3\n' ? true : undefined), 3000, 'the three lines');
    await log.drain();
  });

  it('writes a line by itself once the window has passed, with no drain', async () => {
    const log = openLineLog(dir, 'alone.log');
    log.write('alone');
    await eventually(() => (readFileSync(join(dir, 'alone.log'), 'utf8') === 'alone\n' ? true : undefined), 3000, 'the line');
    await log.drain();
  });

  it('sends a line written after drain() to stderr instead of dropping it', async () => {
    const log = openLineLog(dir, 'late.log');
    log.write('before');
    const drained = log.drain();
    const original = process.stderr.write.bind(process.stderr);
    let captured = '';
    process.stderr.write = (chunk: string) => {
      captured += chunk;
      return true;
    };
    try {
      log.write('after');
    } finally {
      process.stderr.write = original;
    }
    await drained;
    expect(captured).to.equal('late.log: after\n');
    expect(readFileSync(join(dir, 'late.log'), 'utf8')).to.equal('before\n');
  });

  it("writes every line to a log that is a pipe (a container's /dev/stdout), which is not appended to in place", async () => {
    execFileSync('mkfifo', [join(dir, 'pipe.log')]);
    // The reader must exist before the log opens the pipe, or the open blocks: a process of its own.
    const reader = spawn('cat', [join(dir, 'pipe.log')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let received = '';
    reader.stdout.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
    const log = openLineLog(dir, 'pipe.log');
    for (let i = 0; i < 1000; i++) log.write(`line ${i}`);
    await log.drain();
    await once(reader, 'close');
    expect(received.split('\n').filter(Boolean)).to.deep.equal(Array.from({ length: 1000 }, (_, i) => `line ${i}`));
  });
});

describe('a line log rotated by size', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'extqs-rotate-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Every line of `name` and its rotated files (`name.1` … ), oldest file first. */
  function linesAcross(name: string): { files: string[]; lines: string[] } {
    const files = readdirSync(dir).filter((f) => f === name || f.startsWith(`${name}.`));
    const numberOf = (f: string) => (f === name ? 0 : Number(f.slice(name.length + 1)));
    files.sort((a, b) => numberOf(b) - numberOf(a));
    return { files, lines: files.flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean)) };
  }

  it('loses no line and keeps the order across rotations under a burst', async () => {
    const log = openLineLog(dir, 'burst.log', { maxSize: 64 * 1024, maxFiles: 1000 });
    const total = 50_000;
    for (let i = 0; i < total;) {
      for (let k = 0; k < 500; k++, i++) log.write(`line ${i} ${'x'.repeat(40)}`);
      await new Promise((r) => setImmediate(r));
    }
    await log.drain();
    const { files, lines } = linesAcross('burst.log');
    expect(files.length).to.be.greaterThan(10);
    expect(lines.length).to.equal(total);
    expect(lines.every((line, i) => line.startsWith(`line ${i} `))).to.equal(true);
  });

  it('keeps the current file under its name and at most --log-max-files rotated ones', async () => {
    // Batches of 50 lines (2.3 KB): a rotation every other batch.
    const log = openLineLog(dir, 'kept.log', { maxSize: 4096, maxFiles: 3 }, { ...FLUSH_WINDOW, lines: 50 });
    for (let i = 0; i < 2000; i++) log.write(`line ${i} ${'y'.repeat(40)}`);
    await log.drain();
    expect(readdirSync(dir).sort()).to.deep.equal(['kept.log', 'kept.log.1', 'kept.log.2', 'kept.log.3']);
    const { lines } = linesAcross('kept.log');
    // The newest lines survive, in order, ending with the last one written.
    expect(lines[lines.length - 1]).to.match(/^line 1999 /);
    const numbers = lines.map((l) => Number(l.split(' ')[1]));
    expect(numbers.every((n, i) => i === 0 || n === numbers[i - 1] + 1)).to.equal(true);
  });

  it('writes to a fresh file by the same name after reopen(), finishing earlier lines in the moved one', async () => {
    const log = openLineLog(dir, 'moved.log');
    for (let i = 0; i < 100; i++) log.write(`old ${i}`);
    await new Promise((r) => setImmediate(r));
    renameSync(join(dir, 'moved.log'), join(dir, 'moved.log.1'));
    expect(log.reopen()).to.equal(true);
    for (let i = 0; i < 100; i++) log.write(`new ${i}`);
    await log.drain();
    const old = readFileSync(join(dir, 'moved.log.1'), 'utf8').split('\n').filter(Boolean);
    const fresh = readFileSync(join(dir, 'moved.log'), 'utf8').split('\n').filter(Boolean);
    expect(old).to.deep.equal(Array.from({ length: 100 }, (_, i) => `old ${i}`));
    expect(fresh).to.deep.equal(Array.from({ length: 100 }, (_, i) => `new ${i}`));
  });
});
