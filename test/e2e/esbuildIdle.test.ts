// esbuild's service (a child process of each host worker that compiled) stops once nothing has compiled for
// ESBUILD_IDLE_MS, and starts again on the next change: memory at rest holds no compiler.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { ESBUILD_IDLE_MS } from '../../host/controller/esbuildService.ts';
import { get } from '../helpers/http.ts';
import { descendants, eventually, makeSandbox, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** The esbuild services under the launcher, by their command line. */
function esbuildServices(stack: Running): number[] {
  return descendants(stack.child.pid!).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
        .split('\0')
        .some((arg) => /(^|\/)esbuild$/.test(arg));
    } catch {
      return false;
    }
  });
}

describe("esbuild's service at rest", function () {
  this.timeout(ESBUILD_IDLE_MS * 4);
  let sandbox: Sandbox;
  let stack: Running;

  before(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Hello.ts'), `export default () => 'one';\n`);
    stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('stops after the idle time without a compile, and starts again to compile a change', async function () {
    expect((await get(stack.url, '/External/Hello')).body).to.equal('one');
    expect(esbuildServices(stack)).to.have.length(1);
    await eventually(() => (esbuildServices(stack).length === 0 ? true : undefined), ESBUILD_IDLE_MS * 2, 'the service stopped');
    writeFileSync(join(sandbox.controllers, 'Hello.ts'), `export default () => 'two';\n`);
    await eventually(async () => ((await get(stack.url, '/External/Hello')).body === 'two' ? true : undefined), 10_000, 'the change');
    expect(esbuildServices(stack)).to.have.length(1);
  });
});
