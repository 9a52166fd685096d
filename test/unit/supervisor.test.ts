import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { Supervisor, type Launched } from '../../common/supervisor.ts';
import type { PacePolicy } from '../../common/restartPace.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/supervisedChild.js', import.meta.url));

type Mode = 'serve' | 'die' | 'fail' | 'stubborn' | 'hold';

/** Starts the fixture in `mode`; ready on its "ready" line, not ready if it exits first. */
function launchFixture(mode: Mode, log: string[]): Launched<number, number> {
  const child = spawn(process.execPath, [FIXTURE, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line === 'holding') log.push(`holding ${child.pid}`);
      if (line !== 'ready') return;
      log.push(`ready ${child.pid}`);
      resolve(child.pid!);
    });
    child.once('exit', (code) => reject(new Error(`exited with code ${code} before it was ready`)));
  });
  return { handle: child.pid!, process: child, ready };
}

const quick: PacePolicy = { freeExits: 1, windowMs: 60_000, firstDelayMs: 20, maxDelayMs: 40 };

describe('Supervisor', function () {
  const supervisors: Supervisor<number, number>[] = [];
  afterEach(async function () {
    await Promise.all(supervisors.splice(0).map((s) => s.stop('SIGKILL', 0)));
  });

  /** Each line the supervisor's events and the fixtures' ready lines add to a log. */
  const added = new EventEmitter();

  /** A supervisor of fixtures in the modes given one per launch (the last one repeats), and what it reported. */
  function supervise(modes: Mode[], pace = quick) {
    const log: string[] = [];
    const push = log.push.bind(log);
    log.push = (...lines) => {
      const length = push(...lines);
      added.emit('line');
      return length;
    };
    const supervisor = new Supervisor<number, number>({
      launch: () => launchFixture(modes.length > 1 ? modes.shift()! : modes[0], log),
      pace,
      events: {
        left: (pid, how, was) => log.push(`left ${pid} ${how} ${was}`),
        exited: (pid, how, delay) => log.push(`exited ${pid} ${how} restart in ${delay}`),
        restartFailed: (err, delay) => log.push(`restart failed: ${err.message}; again in ${delay}`),
        replaceFailed: (pid, err, delay) => log.push(`replace of ${pid} failed: ${err.message}; again in ${delay}`),
      },
    });
    supervisors.push(supervisor);
    return { supervisor, log };
  }

  /** Resolves once `log` has `count` lines matching `pattern`. */
  async function until(log: string[], pattern: RegExp, count = 1): Promise<void> {
    while (log.filter((line) => pattern.test(line)).length < count) await once(added, 'line');
  }

  it('restarts a child that dies at once, then after the paced delays, doubling to the cap', async function () {
    const { supervisor, log } = supervise(['die']);
    await supervisor.start(1);
    await until(log, /^exited/, 4);
    const delays = log.filter((line) => line.startsWith('exited')).map((line) => Number(/restart in (\d+)/.exec(line)![1]));
    expect(delays.slice(0, 4)).to.deep.equal([0, 20, 40, 40]);
    expect(log.filter((line) => line.startsWith('exited'))[0]).to.match(/^exited \d+ code 1 restart in 0$/);
  });

  it('with readyExitsAtOnce, replaces a child that was ready at once every time, and paces only one that cannot start', async function () {
    const { supervisor, log } = supervise(['die', 'die', 'die', 'die', 'fail', 'fail', 'serve'], { ...quick, readyExitsAtOnce: true });
    await supervisor.start(1);
    await until(log, /^ready/, 5);
    const told = log.filter((line) => !line.startsWith('left')).map((line) => line.replace(/\d{3,}/g, 'PID'));
    expect(told.filter((line) => line.startsWith('exited'))).to.deep.equal(Array(4).fill('exited PID code 1 restart in 0'));
    // One free failed start (freeExits 1), then the paced ones.
    expect(told.filter((line) => line.startsWith('restart failed'))).to.deep.equal([
      'restart failed: exited with code 3 before it was ready; again in 0',
      'restart failed: exited with code 3 before it was ready; again in 20',
    ]);
  });

  it('retries a replacement that cannot become ready, paced as an exit', async function () {
    const { supervisor, log } = supervise(['die', 'fail', 'serve']);
    await supervisor.start(1);
    await until(log, /^ready/, 2);
    const told = log.filter((line) => !line.startsWith('left')).map((line) => line.replace(/\d{3,}/g, 'PID'));
    expect(told).to.deep.equal([
      'ready PID',
      'exited PID code 1 restart in 0',
      'restart failed: exited with code 3 before it was ready; again in 20',
      'ready PID',
    ]);
  });

  it('rejects start() when a child exits before it is ready, and does not restart it', async function () {
    const { supervisor, log } = supervise(['fail']);
    await supervisor.start(1).then(
      () => expect.fail('start() resolved'),
      (err: Error) => expect(err.message).to.equal('exited with code 3 before it was ready'),
    );
    await until(log, /^left/);
    expect(log).to.have.length(1);
    expect(log[0]).to.match(/^left \d+ code 3 starting$/);
    expect(supervisor.handles).to.deep.equal([]);
  });

  it('recycles a child by starting its successor first, then retiring the old one, without a restart', async function () {
    const { supervisor, log } = supervise(['serve']);
    const [old] = await supervisor.start(1);
    supervisor.recycle(old);
    supervisor.recycle(old); // asked twice (two reasons at once): one successor
    await until(log, /^left/);
    const successor = supervisor.handles[0];
    expect(log).to.deep.equal([`ready ${old}`, `ready ${successor}`, `left ${old} code 15 retiring`]);
    expect(supervisor.handles).to.deep.equal([successor]);
  });

  it('keeps a child that asked to retire serving while its successor cannot start, and tries again', async function () {
    const { supervisor, log } = supervise(['serve', 'fail', 'serve']);
    const [old] = await supervisor.start(1);
    supervisor.recycle(old);
    await until(log, /^left .* retiring$/);
    expect(log.filter((line) => !line.startsWith('left') || line.includes(String(old)))).to.deep.equal([
      `ready ${old}`,
      `replace of ${old} failed: exited with code 3 before it was ready; again in 20`,
      log.find((line) => line.startsWith('ready') && !line.includes(String(old))),
      `left ${old} code 15 retiring`,
    ]);
  });

  it('fills the place of a child that died while retiring when its successor cannot start', async function () {
    const { supervisor, log } = supervise(['serve', 'hold', 'serve']);
    const [old] = await supervisor.start(1);
    supervisor.recycle(old);
    await until(log, /^holding/);
    const successor = Number(/^holding (\d+)/.exec(log.find((line) => line.startsWith('holding'))!)![1]);
    process.kill(old, 'SIGKILL');
    await until(log, new RegExp(`^left ${old} `));
    process.kill(successor, 'SIGUSR2');
    await until(log, /^ready/, 2);
    expect(log.slice(1).map((line) => line.replace(/\d{3,}/g, 'PID'))).to.deep.equal([
      'holding PID',
      'left PID signal SIGKILL retiring',
      'left PID code 3 starting',
      'restart failed: exited with code 3 before it was ready; again in 0',
      'ready PID',
    ]);
    expect(supervisor.handles).to.have.length(1);
  });

  it('sends the stop signal to every child and restarts none', async function () {
    const { supervisor, log } = supervise(['serve']);
    const pids = await supervisor.start(3);
    await supervisor.stop('SIGTERM', 60_000);
    expect(log.filter((line) => line.startsWith('left')).sort()).to.deep.equal(pids.map((pid) => `left ${pid} code 15 ready`).sort());
    expect(supervisor.handles).to.deep.equal([]);
  });

  it('kills a child that ignores the stop signal once the grace period is over', async function () {
    const { supervisor, log } = supervise(['stubborn', 'serve']);
    const [stubborn, polite] = await supervisor.start(2);
    await supervisor.stop('SIGTERM', 100);
    expect(log.filter((line) => line.startsWith('left')).sort()).to.deep.equal(
      [`left ${stubborn} signal SIGKILL ready`, `left ${polite} code 15 ready`].sort(),
    );
  });
});
