import { expect } from 'chai';
import {
  callsInFlight,
  currentCall,
  endPendingCall,
  failureOf,
  isLoadingController,
  loadOutsideAnyCall,
  runControllerCall,
  type ControllerCall,
} from '../../host/controller/controllerCall.ts';

const call = (): ControllerCall => ({
  requestId: 'id-1',
  controller: 'Latest',
  mapStack: (stack) => stack,
  file: '/srv/www/controllers/Latest.ts',
  what: 'GET /External/Latest',
  files: ['/srv/www/controllers/Latest.ts'],
});

describe('runControllerCall', function () {
  it('returns what a controller answers at once without a promise, as the call, and leaves nothing in flight', function () {
    const running = call();
    let seen: ControllerCall | undefined;
    const result = runControllerCall(running, {}, () => {
      seen = currentCall();
      expect(callsInFlight().has(running)).to.equal(true);
      return { ok: true };
    });
    expect(result).to.deep.equal({ ok: true });
    expect(seen).to.equal(running);
    expect(callsInFlight().size).to.equal(0);
  });

  it('waits for a promise or any thenable, the call kept across its awaits', async function () {
    const running = call();
    const pending = runControllerCall(running, {}, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return currentCall();
    });
    expect(pending).to.be.instanceOf(Promise);
    expect(callsInFlight().has(running)).to.equal(true);
    expect(await pending).to.equal(running);
    expect(callsInFlight().size).to.equal(0);
    const thenable = { then: (resolve: (value: string) => void) => resolve('later') };
    expect(await runControllerCall(call(), {}, () => thenable)).to.equal('later');
  });

  it('keeps what a controller throws, or its promise rejects with, under the request, and rethrows it', async function () {
    const thrown = new Error('at once');
    const request = {};
    expect(() =>
      runControllerCall(call(), request, () => {
        throw thrown;
      }),
    ).to.throw(thrown);
    expect(failureOf(request)).to.include({ error: thrown, stage: 'run' });
    const rejected = new Error('later');
    const laterRequest = {};
    const failed = runControllerCall(call(), laterRequest, () => Promise.reject(rejected));
    expect(
      await (failed as Promise<unknown>).then(
        () => null,
        (err: unknown) => err,
      ),
    ).to.equal(rejected);
    expect(failureOf(laterRequest)).to.include({ error: rejected, stage: 'run' });
    expect(callsInFlight().size).to.equal(0);
  });

  it('ends the wait on a call still awaited with the error given, and not a call that has returned', async function () {
    const running = call();
    const request = {};
    let finish: (value: string) => void = () => {};
    const pending = runControllerCall(running, request, () => new Promise<string>((resolve) => (finish = resolve)));
    const fault = new Error('a callback of its own failed');
    expect(endPendingCall(running, fault)).to.equal(true);
    expect(
      await (pending as Promise<unknown>).then(
        () => null,
        (err: unknown) => err,
      ),
    ).to.equal(fault);
    expect(failureOf(request)).to.include({ error: fault, stage: 'run' });
    expect(callsInFlight().size).to.equal(0);
    // Its handler's own end, later, is heard by nobody.
    finish('late');
    expect(endPendingCall(running, fault)).to.equal(false);
    const returned = call();
    expect(runControllerCall(returned, {}, () => 'at once')).to.equal('at once');
    expect(endPendingCall(returned, fault)).to.equal(false);
  });
});

describe('loadOutsideAnyCall', function () {
  it("runs a controller's module body outside the call that caused its load, and says it loads meanwhile", async function () {
    const running = call();
    const seen = await runControllerCall(running, {}, () =>
      loadOutsideAnyCall(() => ({
        store: currentCall(),
        loading: isLoadingController(),
        later: Promise.resolve().then(() => currentCall()),
      })),
    );
    expect(seen.store).to.equal(undefined);
    expect(seen.loading).to.equal(true);
    expect(await seen.later).to.equal(undefined);
    expect(isLoadingController()).to.equal(false);
  });
});
