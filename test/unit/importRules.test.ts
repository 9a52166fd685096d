// The import rules `npm run lint` keeps (.dependency-cruiser.js) catch what they name: dependency-cruiser runs
// with the project's configuration over a small tree that breaks each rule once, and over one that breaks none.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DEPCRUISE = join(ROOT, 'node_modules', '.bin', 'depcruise');
const CONFIG = join(ROOT, '.dependency-cruiser.js');

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
  cycle?: { name: string }[];
}

/** Writes `files` (path → source) into a fresh directory and returns what dependency-cruiser finds there. */
async function violationsIn(files: Record<string, string>): Promise<Violation[]> {
  const dir = mkdtempSync(join(tmpdir(), 'extqs-import-rules-'));
  try {
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true, noEmit: true } }));
    for (const [path, source] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), source);
    }
    const roots = [...new Set(Object.keys(files).map((path) => path.split('/')[0]))];
    // Exit code is the number of errors; the JSON report on stdout is what is read either way.
    const { stdout } = await promisify(execFile)(DEPCRUISE, [...roots, '--config', CONFIG, '--output-type', 'json'], { cwd: dir }).catch(
      (error: { stdout: string }) => ({ stdout: error.stdout }),
    );
    return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ruleNames = (violations: Violation[]): string[] => [...new Set(violations.map((violation) => violation.rule.name))].sort();

describe('the import rules (dependency-cruiser)', function () {
  this.timeout(60_000);

  it('finds nothing in a tree whose imports point down and never across proxy and host', async () => {
    const violations = await violationsIn({
      'proxy/roles/run.ts': "import { a } from '../server/server.ts';\nexport const run = a;\n",
      'proxy/server/server.ts': "import { b } from '../core/context.ts';\nexport const a = b;\n",
      'proxy/core/context.ts': "import { c } from '../../common/shared.ts';\nexport const b = c;\n",
      'host/pool/pool.ts': "import { d } from '../controller/call.ts';\nexport const pool = d;\n",
      'host/controller/call.ts': "import { c } from '../../common/shared.ts';\nexport const d = c;\n",
      'common/shared.ts': 'export const c = 1;\n',
    });
    expect(violations).to.deep.equal([]);
  });

  it('names each broken rule: a circle, a type-only circle, proxy ↔ host, common upward, product → test or bench, a layer upward, siblings apart', async () => {
    const violations = await violationsIn({
      'proxy/core/a.ts': "import { b } from './b.ts';\nexport const a = b;\n",
      'proxy/core/b.ts': "import type { A } from './types.ts';\nexport const b: A = 1;\n",
      'proxy/core/types.ts': "import { a } from './a.ts';\nexport type A = typeof a;\n",
      'proxy/core/upward.ts': "import { run } from '../roles/run.ts';\nexport const upward = run;\n",
      'proxy/roles/run.ts': "import { pool } from '../../host/pool/pool.ts';\nexport const run = pool;\n",
      'host/pool/pool.ts': 'export const pool = 1;\n',
      'host/controller/upward.ts': "import { pool } from '../pool/pool.ts';\nexport const upward = pool;\n",
      'host/worker/worker.ts': "import { pool } from '../pool/pool.ts';\nexport const worker = pool;\n",
      'common/shared.ts': "import { pool } from '../host/pool/pool.ts';\nexport const shared = pool;\n",
      'common/helper.ts':
        "import { fixture } from '../test/fixture.ts';\nimport { scenario } from '../bench/scenario.ts';\nexport const helper = [fixture, scenario];\n",
      'test/fixture.ts': 'export const fixture = 1;\n',
      'bench/scenario.ts': "import { fixture } from '../test/fixture.ts';\nexport const scenario = fixture;\n",
    });
    expect(ruleNames(violations)).to.deep.equal(
      [
        'bench-not-tests',
        'common-below-roles',
        'host-controller-upward',
        'host-worker-not-pool',
        'no-circular',
        'product-not-tests',
        'proxy-core-upward',
        'proxy-host-apart',
      ].sort(),
    );
    const circle = violations.find((violation) => violation.rule.name === 'no-circular')?.cycle?.map((step) => step.name);
    expect(circle, 'the circle runs through a type-only import').to.include('proxy/core/types.ts');
  });
});
