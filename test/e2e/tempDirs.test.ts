// A host killed outright leaves its worker sockets' directory in TMPDIR, a worker killed with it the uploads of the
// request it ran, and a launcher killed outright the directory of its host's socket (common/tempDirs.ts). The next
// host to start removes what processes that are gone left, and nothing of a process that still runs.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import {
  descendants,
  eventually,
  makeSandbox,
  readHostEvents,
  roleOf,
  startProcess,
  startStack,
  type Running,
  type Sandbox,
} from '../helpers/stack.ts';

describe('temporary directories left by a process killed outright', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let tmp: string;
  let killed: Running | undefined;
  let next: Running | undefined;
  let killedLauncher: Running | undefined;
  let nextLauncher: Running | undefined;

  before(() => {
    sandbox = makeSandbox();
    // The hosts' own TMPDIR: what this test finds there is theirs and its own.
    tmp = join(sandbox.dir, 'tmp');
    mkdirSync(tmp);
  });

  after(async () => {
    for (const running of [killed, next, killedLauncher, nextLauncher]) await running?.stop();
    sandbox?.remove();
  });

  const hostArgs = (socket: string) => [
    '--www',
    sandbox.www,
    '--logs',
    sandbox.logs,
    '--socket',
    join(sandbox.dir, socket),
    '--workers',
    '1',
  ];

  it('are removed by the next host to start, and those of live processes kept', async () => {
    killed = await startProcess('host', hostArgs('killed.sock'), { TMPDIR: tmp });
    const pid = killed.child.pid!;
    const workers = descendants(pid).filter((child) => roleOf(child) === 'host worker');
    expect(workers).to.have.length(1);
    const socketDir = readdirSync(tmp).find((name) => name.startsWith(`extqs-host-${pid}-`));
    expect(socketDir, 'the worker sockets directory, named for the primary').to.not.equal(undefined);
    expect(readdirSync(join(tmp, socketDir!))).to.not.deep.equal([]);

    // What a worker killed mid-upload would leave, named for a process that is gone; one of a process that runs
    // (this one); and a directory that is not the host's.
    const deadUploads = `extqs-upload-${pid}-aB3dE9`;
    const liveUploads = `extqs-upload-${process.pid}-kEep01`;
    const notOurs = 'extqs-host-cache';
    for (const name of [deadUploads, liveUploads, notOurs]) {
      mkdirSync(join(tmp, name));
      writeFileSync(join(tmp, name, 'php1a2b3c'), 'an upload');
    }

    killed.child.kill('SIGKILL');
    expect(await killed.stop()).to.equal('SIGKILL');
    // Its worker ends with its channel to the primary.
    await eventually(() => (workers.every((worker) => roleOf(worker) === 'exited') ? true : undefined), 10_000, 'the worker to exit');
    expect(existsSync(join(tmp, socketDir!)), 'a killed host cannot remove its own directory').to.equal(true);

    next = await startProcess('host', hostArgs('next.sock'), { TMPDIR: tmp });
    const left = readdirSync(tmp);
    expect(left).to.not.include(socketDir);
    expect(left).to.not.include(deadUploads);
    expect(left).to.include(liveUploads);
    expect(left).to.include(notOurs);
    expect(left.filter((name) => name.startsWith(`extqs-host-${next!.child.pid}-`))).to.have.length(1);
    const removed = readHostEvents(sandbox).filter((event) => event.includes('left by processes that are gone'));
    expect(removed).to.have.length(1);
    expect(removed[0]).to.include('[notice]').and.include(`Removed 2 temporary directories left by processes that are gone: `);
    expect(removed[0]).to.include(socketDir!).and.include(deadUploads);
  });

  it("of a launcher killed outright, its host's socket directory, are removed by the next start", async () => {
    killedLauncher = await startStack(sandbox, ['--workers', '1'], { TMPDIR: tmp });
    const pid = killedLauncher.child.pid!;
    const runDir = readdirSync(tmp).find((name) => name.startsWith(`extqs-run-${pid}-`));
    expect(runDir, "the host's socket directory, named for the launcher").to.not.equal(undefined);
    const children = descendants(pid);

    killedLauncher.child.kill('SIGKILL');
    expect(await killedLauncher.stop()).to.equal('SIGKILL');
    // The proxy and the host end with their channel to the launcher.
    await eventually(() => (children.every((child) => roleOf(child) === 'exited') ? true : undefined), 20_000, 'its children to exit');
    expect(existsSync(join(tmp, runDir!)), 'a killed launcher cannot remove its own directory').to.equal(true);

    nextLauncher = await startStack(sandbox, ['--workers', '1'], { TMPDIR: tmp });
    const left = readdirSync(tmp);
    expect(left).to.not.include(runDir);
    expect(left.filter((name) => name.startsWith(`extqs-run-${nextLauncher!.child.pid}-`))).to.have.length(1);
  });
});
