import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { openLineLog } from '../../common/lineLog.ts';

describe('a line log', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'extqs-linelog-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('has every line on disk, in order, once drain() resolves after a burst under backpressure', async () => {
    const log = openLineLog(dir, 'burst.log');
    const total = 50_000;
    // Bursts of 500 lines a turn fill winston's buffers; drain() used to end the file under them
    // ("write after end") and lose the rest.
    for (let i = 0; i < total; ) {
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

  it('sends a line written after drain() to stderr instead of dropping it', async () => {
    const log = openLineLog(dir, 'late.log');
    log.write('before');
    const drained = log.drain();
    const original = process.stderr.write.bind(process.stderr);
    let captured = '';
    process.stderr.write = ((chunk: string) => {
      captured += chunk;
      return true;
    }) as typeof process.stderr.write;
    try {
      log.write('after');
    } finally {
      process.stderr.write = original;
    }
    await drained;
    expect(captured).to.equal('late.log: after\n');
    expect(readFileSync(join(dir, 'late.log'), 'utf8')).to.equal('before\n');
  });
});
