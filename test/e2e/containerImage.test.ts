// The OCI image of deploy/container/Containerfile, built once and run for real with podman (runc; crun fails on
// this kind of machine's cgroups). No registry is reachable from CI, so the base image the Containerfile pulls
// is made here under its name: Debian's minbase root file system (debootstrap), this machine's node and npm, a
// `node` user (uid 1000) as in the official images, and this machine's CA bundle (npm inside the build reaches
// the registry through it). Users' builds pull the real base. Missing tools skip the file, except under CI=true.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, ROOT, slowController, type Sandbox } from '../helpers/stack.ts';

const run = promisify(execFile);
const BASE = 'docker.io/library/node:20-bookworm-slim';
const IMAGE = 'localhost/extqs-test:latest';
const ULIMITS = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'];
const TOOLS = ['podman', 'runc', 'debootstrap'];
const podman = (args: string[], timeout = 60_000) => run('podman', ['--runtime', 'runc', ...args], { timeout, maxBuffer: 64 << 20 });

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

/** The base image under the name the Containerfile pulls, made from Debian's archive and this machine's node. */
async function makeBaseImage(): Promise<void> {
  if (
    await podman(['image', 'exists', BASE]).then(
      () => true,
      () => false,
    )
  )
    return;
  const root = mkdtempSync(join(tmpdir(), 'extqs-base-'));
  try {
    await run('/usr/sbin/debootstrap', ['--variant=minbase', '--include=passwd', 'bookworm', root, 'http://deb.debian.org/debian'], {
      timeout: 600_000,
    });
    cpSync(process.execPath, join(root, 'usr/local/bin/node'));
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
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe('the container image (podman)', function () {
  this.timeout(20 * 60_000);
  let sandbox: Sandbox;
  let name: string;
  let url: string;
  const logs = async () => {
    const { stdout, stderr } = await podman(['logs', name]);
    return { stdout, stderr };
  };

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

  beforeEach(async function () {
    sandbox = makeSandbox();
    // The temp dir is root's and 0700: the container's user (uid 1000) must pass through it to read www/, as a
    // user's mount must be readable by uid 1000, and writes the call marker there.
    chmodSync(sandbox.dir, 0o777);
    name = `extqs-test-${process.pid}-${Date.now()}`;
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const env = [
      `EXTQS_WWW_ROOT=${sandbox.www}`,
      `EXTQS_PORT=${port}`,
      'EXTQS_WORKERS=1',
      'EXTQS_PROXY_WORKERS=1',
      'EXTQS_SHUTDOWN_TIMEOUT=8',
    ];
    await podman([
      ...['run', '-d', '--init', '--network=host', ...ULIMITS, '--name', name, '-v', `${sandbox.dir}:${sandbox.dir}`],
      ...env.flatMap((setting) => ['-e', setting]),
      IMAGE,
    ]);
    await eventually(async () => ((await logs()).stdout.includes('listening on') ? true : undefined), 30_000, 'the ready line');
  });

  after(async function () {
    await podman(['rmi', '--force', IMAGE]).catch(() => undefined);
  });

  afterEach(async function () {
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

  it('passes its HEALTHCHECK and runs every process as the non-root node user, under an init as PID 1', async function () {
    await podman(['healthcheck', 'run', name]);
    const { stdout: uids } = await podman(['exec', name, 'sh', '-c', "grep -h '^Uid:' /proc/[0-9]*/status | awk '{print $2}' | sort -u"]);
    expect(uids.trim()).to.equal('1000');
    const { stdout: init } = await podman(['exec', name, 'cat', '/proc/1/comm']);
    // podman mounts catatonit as /run/podman-init.
    expect(init.trim()).to.be.oneOf(['podman-init', 'catatonit']);
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
});
