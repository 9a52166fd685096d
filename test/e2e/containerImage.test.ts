// The OCI image of deploy/container/Containerfile, built once and run for real with podman (runc; crun fails on
// this kind of machine's cgroups): `podman run`, and `podman kube play` of deploy/kubernetes as `kubectl
// kustomize` renders it. No registry is reachable from CI, so the base image the Containerfile pulls is made here
// under its name: Debian's minbase root file system (debootstrap; libatomic1, which Node's binary needs and the
// official slim images carry), the npm registry's node binary of the Containerfile's line, this machine's npm, a
// `node` user (uid 1000) as in the official images, and this machine's CA bundle (npm and apt inside the build
// reach their registries through it). Users' builds pull the real base. Missing tools skip the file, except under
// CI=true.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { freePort } from '../../tools/ports.ts';
import { get } from '../helpers/http.ts';
import { total } from '../helpers/metrics.ts';
import { queried, startPrometheus, type Prometheus } from '../helpers/prometheus.ts';
import { eventually, makeSandbox, ROOT, slowController, type Sandbox } from '../helpers/stack.ts';

const run = promisify(execFile);
/** The base the Containerfile names (ARG NODE_IMAGE), e.g. docker.io/library/node:26-bookworm-slim. */
const BASE = /^ARG NODE_IMAGE=(\S+)$/m.exec(readFileSync(join(ROOT, 'deploy/container/Containerfile'), 'utf8'))![1];
const NODE_MAJOR = /node:(\d+)-/.exec(BASE)![1];
const IMAGE = 'localhost/extqs-test:latest';
// This kind of machine refuses runc's default rlimits: `podman run` takes these flags, `podman kube play` reads
// the same from a containers.conf (CONTAINERS_CONF).
const ULIMITS = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'];
const TOOLS = ['podman', 'runc', 'debootstrap', 'kubectl'];
const podman = (args: string[], timeout = 60_000, env: NodeJS.ProcessEnv = process.env) =>
  run('podman', ['--runtime', 'runc', ...args], { timeout, maxBuffer: 64 << 20, env });

function missingTools(): string[] {
  return TOOLS.filter((tool) => {
    try {
      execFileSync('sh', ['-c', `command -v ${tool} || test -x /usr/sbin/${tool}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
}

/** The base image under the name the Containerfile pulls, made from Debian's archive and the registry's node. */
async function makeBaseImage(): Promise<void> {
  if (
    await podman(['image', 'exists', BASE]).then(
      () => true,
      () => false,
    )
  )
    return;
  const root = mkdtempSync(join(tmpdir(), 'extqs-base-'));
  const nodePackage = mkdtempSync(join(tmpdir(), 'extqs-node-'));
  try {
    await run(
      '/usr/sbin/debootstrap',
      ['--variant=minbase', '--include=passwd,libatomic1', 'bookworm', root, 'http://deb.debian.org/debian'],
      {
        timeout: 600_000,
      },
    );
    // The npm registry's `node` package ships the binary of its version.
    await run('npm', ['i', '--prefix', nodePackage, '--no-save', '--no-audit', '--no-fund', `node@${NODE_MAJOR}`], { timeout: 600_000 });
    cpSync(join(nodePackage, 'node_modules/node/bin/node'), join(root, 'usr/local/bin/node'));
    mkdirSync(join(root, 'usr/local/lib/node_modules'), { recursive: true });
    cpSync('/usr/lib/node_modules/npm', join(root, 'usr/local/lib/node_modules/npm'), { recursive: true });
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(root, 'usr/local/bin/npm'));
    cpSync('/etc/ssl/certs/ca-certificates.crt', join(root, 'etc/extqs-build-ca.crt'));
    execFileSync('chroot', [root, 'useradd', '--uid', '1000', '--create-home', '--shell', '/bin/bash', 'node']);
    const changes = ['ENV NODE_EXTRA_CA_CERTS=/etc/extqs-build-ca.crt', 'ENV PATH=/usr/local/bin:/usr/bin:/bin', 'CMD ["node"]'];
    await run('sh', ['-c', `tar -C ${root} -c . | podman import ${changes.map((c) => `--change '${c}'`).join(' ')} - ${BASE}`], {
      timeout: 300_000,
      maxBuffer: 64 << 20,
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(nodePackage, { recursive: true, force: true });
  }
}

/** A controller that says on the console (host.log, so stderr) that a request reached it, then answers after `ms`. */
const SLOW_CONTROLLER = (ms: number) =>
  `export default async () => { console.log('Slow reached'); await new Promise((r) => setTimeout(r, ${ms})); return 'done slowly'; };\n`;

describe('the container image (podman)', function () {
  this.timeout(20 * 60_000);

  before(async function () {
    const missing = missingTools();
    if (missing.length > 0) {
      if (process.env.CI === 'true') throw new Error(`CI needs ${missing.join(', ')} (.ci/run installs them)`);
      this.skip();
    }
    await makeBaseImage();
    // --layers=false keeps no intermediate stage images; after() removes the image itself: runs leave nothing behind
    // but the base image, which the next run reuses.
    const build = ['build', '--format', 'docker', '--pull=never', '--layers=false', '--network=host', ...ULIMITS];
    await podman([...build, '-f', 'deploy/container/Containerfile', '-t', IMAGE, ROOT], 15 * 60_000);
  });

  after(async function () {
    await podman(['rmi', '--force', IMAGE]).catch(() => undefined);
  });

  describe('podman run', function () {
    let sandbox: Sandbox;
    let name: string;
    let url: string;
    let metricsUrl: string;
    let prometheus: Prometheus | undefined;
    const logs = async () => {
      const { stdout, stderr } = await podman(['logs', name]);
      return { stdout, stderr };
    };

    beforeEach(async function () {
      sandbox = makeSandbox();
      // The temp dir is root's and 0700: the container's user (uid 1000) must pass through it to read www/, as a
      // user's mount must be readable by uid 1000, and writes the call marker there.
      chmodSync(sandbox.dir, 0o777);
      name = `extqs-test-${process.pid}-${Date.now()}`;
      const [port, metricsPort] = [await freePort(), await freePort()];
      url = `http://127.0.0.1:${port}`;
      metricsUrl = `http://127.0.0.1:${metricsPort}`;
      const env = [
        `EXTQS_WWW_ROOT=${sandbox.www}`,
        `EXTQS_PORT=${port}`,
        `EXTQS_METRICS_PORT=${metricsPort}`,
        'EXTQS_WORKERS=1',
        'EXTQS_PROXY_WORKERS=1',
        'EXTQS_SHUTDOWN_TIMEOUT=8',
      ];
      // No --init: the image brings its own.
      await podman([
        ...['run', '-d', '--network=host', ...ULIMITS, '--name', name, '-v', `${sandbox.dir}:${sandbox.dir}`],
        ...env.flatMap((setting) => ['-e', setting]),
        IMAGE,
      ]);
      await eventually(async () => ((await logs()).stdout.includes('listening on') ? true : undefined), 30_000, 'the ready line');
    });

    afterEach(async function () {
      await prometheus?.stop();
      prometheus = undefined;
      await podman(['rm', '-f', '-t', '0', name]).catch(() => undefined);
      sandbox?.remove();
    });

    it("answers the seed's four requests, with their lines on podman logs (access on stdout, errors on stderr)", async function () {
      const seed = ['/External/Latest?sn=123&no=1', '/External/Latest?sn=123&no=', '/External/Alarm?all_alarm&all', '/favicon.ico'];
      const statuses = [];
      for (const path of seed) statuses.push((await get(url, path)).status);
      expect(statuses).to.deep.equal([500, 500, 500, 404]);
      const accessLines = async () => (await logs()).stdout.split('\n').filter((line) => / HTTP\/1\.1" \d{3} /.test(line));
      await eventually(async () => ((await accessLines()).length === 4 ? true : undefined), 5000, 'four access lines');
      const { stderr } = await logs();
      expect(stderr).to.contain('End of script output before headers: /External/Latest');
      expect(stderr).to.contain('AH00128: File does not exist');
      expect(stderr).to.contain('Failed opening controller script');
    });

    it("passes its HEALTHCHECK and runs every process as the non-root node user, under the image's init as PID 1", async function () {
      await podman(['healthcheck', 'run', name]);
      const { stdout: uids } = await podman(['exec', name, 'sh', '-c', "grep -h '^Uid:' /proc/[0-9]*/status | awk '{print $2}' | sort -u"]);
      expect(uids.trim()).to.equal('1000');
      const { stdout: init } = await podman(['exec', name, 'cat', '/proc/1/comm']);
      expect(init.trim()).to.equal('tini');
      const { stdout: version } = await podman(['exec', name, 'node', '--version']);
      expect(version).to.match(new RegExp(`^v${NODE_MAJOR}\\.`));
    });

    it('stops on podman stop within the grace period, answering the request in flight', async function () {
      const slow = slowController(sandbox, 'Slow', 2000);
      const inFlight = get(url, '/External/Slow');
      await slow.reached(10_000);
      const started = Date.now();
      await podman(['stop', '-t', '15', name]);
      const reply = await inFlight;
      expect([reply.status, reply.body]).to.deep.equal([200, 'done slowly']);
      expect(Date.now() - started).to.be.below(15_000);
      const { stdout: exit } = await podman(['inspect', name, '--format', '{{.State.ExitCode}}']);
      expect(exit.trim()).to.equal('0');
    });

    it('runs `extqs check` on controllers mounted as the Deployment mounts them: 0 when good, 1 and the type error when not', async function () {
      const checked = async (source: string) => {
        const dir = mkdtempSync(join(sandbox.dir, 'controllers-'));
        chmodSync(dir, 0o755);
        writeFileSync(join(dir, 'Checked.ts'), source);
        // www/ is the image's own, with its tsconfig.json: only controllers/ is mounted, as the ConfigMap is.
        return podman(['run', '--rm', '--network=host', ...ULIMITS, '-v', `${dir}:/opt/extqs/www/controllers:ro`, IMAGE, 'check']).then(
          ({ stdout }) => ({ code: 0, stdout }),
          (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
        );
      };
      const good = await checked(`export default () => ({ ok: true });\n`);
      expect(good.stdout).to.contain('check: no problem found');
      expect(good.code, good.stdout).to.equal(0);
      const bad = await checked(`export default (): number => 'not a number';\n`);
      expect(bad.stdout).to.contain("/opt/extqs/www/controllers/Checked.ts:1:30 Type 'string' is not assignable to type 'number'.");
      expect(bad.code, bad.stdout).to.equal(1);
    });

    it('is scraped by a real Prometheus on its metrics port', async function () {
      prometheus = await startPrometheus(sandbox, new URL(metricsUrl).host);
      expect(await eventually(() => queried(prometheus!, 'extqs_proxy_workers{job="extqs"}'), 20_000, 'a scrape in Prometheus')).to.equal(
        1,
      );
      expect(await queried(prometheus, 'up{job="extqs"}')).to.equal(1);
      // The public port keeps /metrics to --status-allow; this one serves nothing else.
      expect((await get(metricsUrl, '/server-status')).status).to.equal(404);
    });
  });

  describe('podman kube play of deploy/kubernetes (kubectl kustomize)', function () {
    let dir: string;
    let manifests: string;
    let url: string;
    let metricsUrl: string;
    const conf = { ...process.env };
    const pod = 'extqs-pod-0';
    const container = `${pod}-extqs`;

    before(async function () {
      dir = mkdtempSync(join(tmpdir(), 'extqs-kube-'));
      const [port, metricsPort] = [await freePort(), await freePort()];
      url = `http://127.0.0.1:${port}`;
      metricsUrl = `http://127.0.0.1:${metricsPort}`;
      // An overlay, as an operator writes one: this image, one replica, a shorter shutdown, a slow controller beside
      // the manifests' own, and the host's network on free ports (podman 4.3 removes a pod's own network as it
      // stops the pod's infra container, while extqs still finishes: an answer in flight would be lost there).
      // podman maps declared container ports even then, so they go.
      writeFileSync(join(dir, 'Slow.ts'), SLOW_CONTROLLER(2000));
      const settings = [
        'EXTQS_SHUTDOWN_TIMEOUT=8',
        'EXTQS_WORKERS=1',
        'EXTQS_LISTEN=127.0.0.1',
        `EXTQS_PORT=${port}`,
        `EXTQS_METRICS_PORT=${metricsPort}`,
      ];
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [${JSON.stringify(relative(dir, join(ROOT, 'deploy/kubernetes')))}]
images:
  - { name: localhost/extqs, newName: ${IMAGE.split(':')[0]}, newTag: ${IMAGE.split(':')[1]} }
replicas:
  - { name: extqs, count: 1 }
configMapGenerator:
  - { name: extqs-controllers, behavior: merge, files: [Slow.ts] }
  - { name: extqs-settings, behavior: merge, literals: ${JSON.stringify(settings)} }
patches:
  - target: { kind: Deployment, name: extqs }
    patch: |
      - { op: add, path: /spec/template/spec/hostNetwork, value: true }
      - { op: remove, path: /spec/template/spec/containers/0/ports }
`,
      );
      manifests = join(dir, 'manifests.yaml');
      writeFileSync(manifests, execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 }));
      writeFileSync(join(dir, 'containers.conf'), `[containers]\ndefault_ulimits = ${JSON.stringify(ULIMITS.filter((_, i) => i % 2))}\n`);
      conf.CONTAINERS_CONF = join(dir, 'containers.conf');
      await podman(['kube', 'play', manifests], 120_000, conf);
      await eventually(
        async () => ((await get(url, '/External/Hello').catch(() => undefined))?.status === 200 ? true : undefined),
        60_000,
        'the pod',
      );
    });

    after(async function () {
      await podman(['pod', 'rm', '-f', '-t', '0', pod]).catch(() => undefined);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('answers a controller of the generated ConfigMap, and /metrics on the metrics port', async function () {
      const reply = await get(url, '/External/Hello');
      expect([reply.status, JSON.parse(reply.body)]).to.deep.equal([200, { hello: 'world' }]);
      const metrics = await get(metricsUrl, '/metrics');
      expect(metrics.status).to.equal(200);
      expect(total(metrics.body, 'extqs_proxy_workers')).to.equal(1);
    });

    // Last: it stops the pod. With the pod spec's old shared process namespace, the pause process was PID 1 and
    // `podman pod stop` killed every process with it: exit 137, no shutdown line, the answer in flight lost.
    it('stops on podman pod stop within the grace period, answering the request in flight, exit 0', async function () {
      this.timeout(120_000);
      const grace = 30;
      // Its outcome is kept, not thrown: a lost answer fails below beside the exit code and the logs.
      const inFlight = get(url, '/External/Slow').catch((err: Error) => err.message);
      const logs = async () => {
        const { stdout, stderr } = await podman(['logs', container]);
        return stdout + stderr;
      };
      await eventually(async () => ((await logs()).includes('Slow reached') ? true : undefined), 20_000, 'the request in the controller');
      const started = Date.now();
      await podman(['pod', 'stop', '-t', String(grace), pod], 60_000);
      const stopSeconds = (Date.now() - started) / 1000;
      const reply = await inFlight;
      const { stdout: exit } = await podman(['inspect', container, '--format', '{{.State.ExitCode}}']);
      const stopped = { reply: typeof reply === 'string' ? reply : [reply.status, reply.body], exit: exit.trim() };
      const why = await logs();
      expect(stopped, why).to.deep.equal({ reply: [200, 'done slowly'], exit: '0' });
      expect(stopSeconds).to.be.below(grace);
      // The launcher's line, then the proxy's and the host's, in the order the launcher stops them.
      const shutdownLines = [
        'extqs: SIGTERM: stopping the proxy, then the host',
        'caught SIGTERM, shutting down',
        'shutting down (SIGTERM)',
      ];
      const at = shutdownLines.map((line) => why.indexOf(line));
      expect(
        at.every((index, i) => index >= 0 && (i === 0 || index > at[i - 1])),
        why,
      ).to.equal(true);
    });
  });
});
