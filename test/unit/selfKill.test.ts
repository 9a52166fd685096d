import { expect } from 'chai';
import { killsItself } from '../../host/worker/selfKill.ts';

describe("a controller's process.kill()", function () {
  const none = () => 0;
  const own = 4242;

  it('ends its own process with a signal that ends one and no listener', function () {
    expect(killsItself(own, 'SIGKILL', own, none)).to.equal(true);
    expect(killsItself(own, 9, own, none)).to.equal(true);
    expect(killsItself(own, 'SIGSEGV', own, none)).to.equal(true);
    expect(killsItself(own, undefined, own, none)).to.equal(true);
  });

  it('does not for another pid, signal 0, a signal that stops or is ignored, or an unknown one', function () {
    expect(killsItself(own + 1, 'SIGKILL', own, none)).to.equal(false);
    expect(killsItself(own, 0, own, none)).to.equal(false);
    expect(killsItself(own, 'SIGSTOP', own, none)).to.equal(false);
    expect(killsItself(own, 'SIGCHLD', own, none)).to.equal(false);
    expect(killsItself(own, 'SIGNOPE', own, none)).to.equal(false);
  });

  it('does not for a signal the process listens to (SIGTERM retires a worker), except SIGKILL', function () {
    const listened = (name: string) => (name === 'SIGTERM' || name === 'SIGKILL' ? 1 : 0);
    expect(killsItself(own, 'SIGTERM', own, listened)).to.equal(false);
    expect(killsItself(own, undefined, own, listened)).to.equal(false);
    expect(killsItself(own, 'SIGKILL', own, listened)).to.equal(true);
  });
});
