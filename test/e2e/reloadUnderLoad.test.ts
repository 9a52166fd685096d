// Zero-drop reload: under a steady load of 50 connections, 100 atomic replacements (write a temp file,
// rename) and 100 in-place saves of a controller fail no request, and every request that starts a
// window after a save is answered by that version or a later one.
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { makeSandbox, startStack, type Running, type Sandbox } from '../helpers/stack.ts';
import { steadyLoad } from '../helpers/steadyLoad.ts';

const CONNECTIONS = 50;
const SAVES = 200;
const SAVE_EVERY_MS = 40;
/** Debounce (75 ms) plus file-system event latency, with room for a loaded 2-core CI machine. */
const WINDOW_MS = 500;

/** The version a controller answered, -1 for anything else. */
function versionOf(body: string): number {
  try {
    return (JSON.parse(body) as { v: number }).v;
  } catch {
    return -1;
  }
}

describe('reloading under load', function () {
  this.timeout(120_000);
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Live.ts'), `export default () => ({ v: 0 });\n`);
    stack = await startStack(sandbox, ['--workers', '2']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('fails no request across 100 atomic and 100 in-place saves, and serves each new version after the window', async function () {
    // Steady, not flat-out: each connection sends again 10 ms after its answer.
    const load = steadyLoad(stack.url, CONNECTIONS, () => '/External/Live', 10);
    const savedAt: number[] = [0];
    const file = join(sandbox.controllers, 'Live.ts');
    for (let v = 1; v <= SAVES; v++) {
      const source = `export default () => ({ v: ${v} });\n`;
      if (v % 2 === 1) {
        writeFileSync(`${file}.tmp`, source); // not a controller name: ignored by the watcher
        renameSync(`${file}.tmp`, file);
      } else {
        writeFileSync(file, source);
      }
      savedAt.push(Date.now());
      await new Promise((r) => setTimeout(r, SAVE_EVERY_MS));
    }
    await new Promise((r) => setTimeout(r, WINDOW_MS + 200));
    await load.stop();
    const samples = load.samples.map(({ startedAt, status, body, error }) => ({ startedAt, status, version: versionOf(body), error }));

    const failed = samples.filter((s) => s.status !== 200 || s.version < 0);
    expect(failed, `failed requests: ${JSON.stringify(failed.slice(0, 5))}`).to.deep.equal([]);
    expect(samples.length).to.be.greaterThan(1000);
    const stale = samples.filter((s) => {
      let required = 0;
      for (let v = 1; v <= SAVES; v++) if (savedAt[v] + WINDOW_MS <= s.startedAt) required = v;
      return s.version < required;
    });
    expect(stale, `stale answers: ${JSON.stringify(stale.slice(0, 5))}`).to.deep.equal([]);
    expect(samples.at(-1)!.version).to.equal(SAVES);
  });
});
