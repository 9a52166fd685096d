// What each process of `extqs start` loads. Every package a process loads stays in its memory while it
// idles (docs/benchmarks.md, "Start-up and memory"), so each role loads only what it uses.
import { expect } from 'chai';
import { descendants, makeSandbox, roleOf, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/**
 * The packages each process loaded through require(), from NODE_DEBUG=module's `MODULE <pid>: load "<file>"`
 * lines (an ES module that a package imports is not named, but the CommonJS files it requires are).
 */
function packagesByPid(stderr: string): Map<number, Set<string>> {
  return filesByPid(stderr, (file) => /.*node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1]);
}

/** What each process loaded, as `name` makes it of each file's path (undefined: not counted). */
function filesByPid(stderr: string, name: (file: string) => string | undefined): Map<number, Set<string>> {
  const loaded = new Map<number, Set<string>>();
  for (const [, pid, file] of stderr.matchAll(/^MODULE (\d+): load "([^"]+)"/gm)) {
    const named = name(file);
    if (named === undefined) continue;
    if (!loaded.has(Number(pid))) loaded.set(Number(pid), new Set());
    loaded.get(Number(pid))!.add(named);
  }
  return loaded;
}

describe('what each process of extqs start loads', function () {
  let sandbox: Sandbox;
  let stack: Running | undefined;
  beforeEach(() => (sandbox = makeSandbox()));
  afterEach(async () => {
    await stack?.stop();
    sandbox.remove();
  });

  it('a proxy primary loads no serving code and no forwarding engine; a worker with http-proxy loads it; none winston', async function () {
    this.timeout(40_000); // every process writes each module it loads
    const args = ['--workers', '1', '--proxy-workers', '2', '--forwarder', 'http-proxy'];
    stack = await startStack(sandbox, args, { NODE_DEBUG: 'module' });
    const roles = new Map(descendants(stack.child.pid!).map((pid) => [pid, roleOf(pid)]));
    await stack.stop();
    const loaded = packagesByPid(stack.stderr());
    const packagesOf = (role: string) => [...roles].filter(([, r]) => r === role).map(([pid]) => loaded.get(pid) ?? new Set<string>());

    const [primary] = packagesOf('proxy');
    // The probe sees each role's own packages: their absence below is not the probe's.
    expect([...primary], 'the proxy primary writes the logs').to.include('winston');
    for (const serving of ['send', 'http-errors', 'mime-types', 'undici', 'http-proxy']) {
      expect([...primary], `the proxy primary loads ${serving}`).not.to.include(serving);
    }
    const workers = packagesOf('proxy worker');
    expect(workers).to.have.length(2);
    for (const worker of workers) {
      expect([...worker], 'a proxy worker forwards with http-proxy').to.include('http-proxy');
      expect([...worker], 'a proxy worker relays its log lines to the primary').not.to.include('winston');
    }
    const [hostWorker] = packagesOf('host worker');
    expect([...hostWorker], 'a host worker serves with fastify').to.include('fastify');
    expect([...hostWorker], 'a host worker relays its log lines to the host').not.to.include('winston');
  });

  it('a proxy with the default engine loads no client package (the builtin engine is its own)', async function () {
    this.timeout(40_000);
    stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1'], { NODE_DEBUG: 'module' });
    const proxies = descendants(stack.child.pid!).filter((pid) => roleOf(pid) === 'proxy');
    await stack.stop();
    const loaded = packagesByPid(stack.stderr());
    expect(proxies).to.have.length(1);
    const packages = [...(loaded.get(proxies[0]) ?? new Set<string>())];
    expect(packages, 'the proxy serves files with send').to.include('send');
    expect(packages.filter((name) => name === 'undici' || name === 'http-proxy')).to.deep.equal([]);
  });
});
