// --proxy-workers 2: two proxy workers share the port under the proxy's primary, which alone writes
// access.log and error.log, sums /server-status, passes SIGHUP on, replaces a worker that dies, and stops
// them gracefully (docs/design.md §2.1, §11). Each stack is the real launcher on port 0.
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, slowController, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** The pids in the error.log lines that contain `text`. */
function pidsOf(sandbox: Sandbox, text: string): Set<number> {
  return new Set(
    readLog(sandbox, 'error.log')
      .filter((line) => line.includes(text))
      .map((line) => Number(/\[pid (\d+)\]/.exec(line)?.[1])),
  );
}

describe('two proxy workers (--proxy-workers 2)', function () {
  this.timeout(30_000);
  let sandbox: Sandbox;
  let stack: Running | undefined;

  beforeEach(async function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Echo.ts'), `export default ({ query }: any) => ({ sn: query.sn });\n`);
    stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '2']);
  });

  afterEach(async function () {
    await stack?.stop();
    stack = undefined;
    sandbox.remove();
  });

  /** The primary's pid, from its start line. */
  const primaryPid = () => Number(/extqs proxy (\d+) configured/.exec(readLog(sandbox, 'error.log').join('\n'))?.[1]);

  it('serves from both workers, each connection in turn, and the primary writes one line per request', async function () {
    const paths = ['/favicon.ico', '/External/Echo?sn=1', '/External/Latest?sn=2', '/favicon.ico', '/favicon.ico', '/External/Echo?sn=3'];
    const replies = [];
    for (const path of paths) replies.push(await get(stack!.url, path)); // a new connection each
    expect(replies.map((r) => r.status)).to.deep.equal([404, 200, 500, 404, 404, 200]);
    expect(replies[1].body).to.equal('{"sn":"1"}');
    expect(replies[2].body).to.contain('<title>500 Internal Server Error</title>');

    const access = await eventually(() => {
      const lines = readLog(sandbox, 'access.log');
      return lines.length >= paths.length ? lines : undefined;
    });
    expect(access).to.have.length(paths.length);
    for (const path of paths)
      expect(
        access.some((line) => line.includes(`"GET ${path} HTTP/1.1"`)),
        path,
      ).to.equal(true);
    await eventually(() =>
      readLog(sandbox, 'error.log').some((l) => l.includes('End of script output before headers')) ? true : undefined,
    );
    // Three favicon misses on three connections: the cluster hands connections out in turn.
    const workers = pidsOf(sandbox, 'AH00128: File does not exist');
    expect(workers.size).to.equal(2);
    expect(workers.has(primaryPid())).to.equal(false);
    // The start line once, from the primary.
    expect(readLog(sandbox, 'error.log').filter((l) => l.includes('resuming normal operations'))).to.have.length(1);
  });

  it('sums every worker in /server-status', async function () {
    for (let i = 0; i < 5; i++) expect((await get(stack!.url, '/favicon.ico')).status).to.equal(404);
    const status = JSON.parse((await get(stack!.url, '/server-status?json')).body) as {
      totalAccesses: number;
      statuses: Record<string, number>;
    };
    expect(status.totalAccesses).to.equal(5);
    expect(status.statuses['404']).to.equal(5);
  });

  it('replaces a worker killed with SIGKILL, on the same port, after a SIGHUP too', async function () {
    for (let i = 0; i < 2; i++) await get(stack!.url, '/favicon.ico');
    const [victim] = await eventually(() => {
      const pids = [...pidsOf(sandbox, 'AH00128')];
      return pids.length > 0 ? pids : undefined;
    });
    // After a reload the launcher's settings carry the port --port 0 found; the replacement must share it.
    stack!.child.kill('SIGHUP');
    await eventually(() => (readLog(sandbox, 'error.log').some((l) => l.includes('SIGHUP received')) ? true : undefined));
    process.kill(victim, 'SIGKILL');
    await eventually(() =>
      readLog(sandbox, 'error.log').find((l) => l.includes(`proxy worker ${victim} exited with signal SIGKILL; starting a new one`)),
    );
    for (let i = 0; i < 4; i++) expect((await get(stack!.url, '/External/Echo?sn=4')).status).to.equal(200);
    expect(readLog(sandbox, 'error.log').filter((l) => l.includes('Could not start a proxy worker'))).to.deep.equal([]);
  });

  it('reopens the logs on SIGHUP in the primary alone, and the workers write on into the new files', async function () {
    await get(stack!.url, '/favicon.ico');
    await eventually(() => (readLog(sandbox, 'access.log').length === 1 ? true : undefined));
    renameSync(join(sandbox.logs, 'access.log'), join(sandbox.logs, 'access.log.1'));
    renameSync(join(sandbox.logs, 'error.log'), join(sandbox.logs, 'error.log.1'));
    stack!.child.kill('SIGHUP');
    await eventually(() => (readLog(sandbox, 'error.log').some((l) => l.includes('SIGHUP received')) ? true : undefined));
    for (let i = 0; i < 4; i++) await get(stack!.url, `/favicon.ico?after=${i}`);
    const access = await eventually(() => {
      const lines = readLog(sandbox, 'access.log');
      return lines.length === 4 ? lines : undefined;
    });
    expect(access.every((line) => line.includes('after='))).to.equal(true);
    expect(readLog(sandbox, 'error.log').filter((l) => l.includes('SIGHUP received'))).to.have.length(1);
  });

  it('finishes a request in flight when it stops, and logs it', async function () {
    const called = slowController(sandbox, 'Slow', 700);
    const pending = get(stack!.url, '/External/Slow');
    await called.reached();
    const code = stack!.stop();
    const reply = await pending;
    expect(reply.status).to.equal(200);
    expect(reply.body).to.equal('done slowly');
    expect(await code).to.equal(0);
    stack = undefined;
    expect(readLog(sandbox, 'access.log').filter((l) => l.includes('"GET /External/Slow HTTP/1.1" 200 11'))).to.have.length(1);
    expect(readLog(sandbox, 'error.log').filter((l) => l.includes('caught SIGTERM, shutting down'))).to.have.length(1);
  });
});
