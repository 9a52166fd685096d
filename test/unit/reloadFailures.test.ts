// A controller whose reload failed is reported once per version and failure (docs/design.md §7): a saved
// helper retries every failed controller, since it may be the fix, and one that fails as before is not
// reported again (it was three times, once per refresh the watcher makes of a save).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { ControllerRegistry } from '../../host/controller/registry.ts';
import { makeSandbox, type Sandbox } from '../../tools/sandbox.ts';

describe('a controller whose reload fails', function () {
  let sandbox: Sandbox;
  let reports: string[];
  let registry: ControllerRegistry;
  let helper: string;

  beforeEach(function () {
    sandbox = makeSandbox();
    reports = [];
    registry = new ControllerRegistry(
      sandbox.controllers,
      {
        loaded: () => {},
        removed: () => {},
        reloadFailed: (name, err) => void reports.push(`${name}: ${(err as Error).message}`),
        disposeFailed: () => {},
      },
      'owner',
    );
    mkdirSync(join(sandbox.controllers, 'lib'));
    helper = join(sandbox.controllers, 'lib', 'greet.ts');
    writeFileSync(helper, "export const greet = 'hello';\n");
    writeFileSync(join(sandbox.controllers, 'Broken.ts'), 'export default () => {\n  return {;\n};\n');
  });
  afterEach(() => sandbox.remove());

  it('is reported once, however many times an unrelated helper is saved', async function () {
    await registry.refresh('Broken');
    expect(reports).to.have.length(1);
    expect(reports[0]).to.match(/^Broken: Parse error in controller script .*Broken\.ts:2:11/);
    // The watcher refreshes at once and again 75 ms later, for each of two saves.
    for (let save = 0; save < 2; save += 1) {
      writeFileSync(helper, `export const greet = 'hello ${save}';\n`);
      await registry.refreshDependents(helper);
      await registry.refreshDependents(helper);
    }
    expect(reports).to.have.length(1);
  });

  it('is reported again for a new version that fails', async function () {
    await registry.refresh('Broken');
    writeFileSync(join(sandbox.controllers, 'Broken.ts'), 'export default () => {\n\n  return {;\n};\n');
    await registry.refresh('Broken');
    expect(reports).to.have.length(2);
    expect(reports[1]).to.match(/Broken\.ts:3:11/);
  });

  it('is reported again when it fails after a version that loaded', async function () {
    await registry.refresh('Broken');
    writeFileSync(join(sandbox.controllers, 'Broken.ts'), "export default () => 'ok';\n");
    await registry.refresh('Broken');
    writeFileSync(join(sandbox.controllers, 'Broken.ts'), 'export default () => {\n  return {;\n};\n');
    await registry.refresh('Broken');
    expect(reports).to.have.length(2);
    await registry.disposeAll();
  });
});
