import { EventEmitter } from 'node:events';
import { expect } from 'chai';
import { IpcChannel, type Conversation, type Endpoint } from '../../common/ipc.ts';

interface ParentSays extends Conversation {
  requests: {
    add: { body: { a: number; b: number }; reply: number };
    fail: { body: null; reply: null };
    never: { body: null; reply: null };
  };
  notices: { hello: string };
}
interface ChildSays extends Conversation {
  requests: { ping: { body: null; reply: 'pong' } };
  notices: Record<never, never>;
}

/** Two ends of an in-memory channel with IPC's JSON serialization, delivered a turn later. */
function pair(): { parent: Endpoint; child: Endpoint; close(): void } {
  const sides = [new EventEmitter(), new EventEmitter()];
  let open = true;
  const end = (self: EventEmitter, other: EventEmitter): Endpoint => ({
    send(message, callback) {
      if (!open) {
        setImmediate(() => callback(new Error('channel closed')));
        return;
      }
      const copy: unknown = JSON.parse(JSON.stringify(message));
      setImmediate(() => {
        other.emit('message', copy);
        callback(null);
      });
    },
    on: (event: string, listener: (...args: never[]) => void) => self.on(event, listener as (...args: unknown[]) => void),
    connected: () => open,
  });
  return {
    parent: end(sides[0], sides[1]),
    child: end(sides[1], sides[0]),
    close() {
      open = false;
      for (const side of sides) side.emit('disconnect');
    },
  };
}

describe('the IPC channel', () => {
  it('answers a request with its reply, and requests both ways', async () => {
    const { parent, child } = pair();
    const parentChannel = new IpcChannel<ParentSays, ChildSays>(parent);
    const childChannel = new IpcChannel<ChildSays, ParentSays>(child);
    childChannel.answer('add', ({ a, b }) => a + b);
    parentChannel.answer('ping', () => 'pong');
    expect(await parentChannel.request('add', { a: 2, b: 3 }, 1000)).to.equal(5);
    expect(await childChannel.request('ping', null, 1000)).to.equal('pong');
  });

  it('rejects with the message the other side threw', async () => {
    const { parent, child } = pair();
    new IpcChannel<ChildSays, ParentSays>(child).answer('fail', () => {
      throw new Error('no such thing');
    });
    const request = new IpcChannel<ParentSays, ChildSays>(parent).request('fail', null, 1000);
    await expectRejection(request, 'no such thing');
  });

  it('keeps a request that arrives before its handler, and answers it once the handler is set', async () => {
    const { parent, child } = pair();
    const childChannel = new IpcChannel<ChildSays, ParentSays>(child);
    const reply = new IpcChannel<ParentSays, ChildSays>(parent).request('add', { a: 1, b: 1 }, 1000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    childChannel.answer('add', ({ a, b }) => a + b);
    expect(await reply).to.equal(2);
  });

  it('delivers notices in order, also those sent before the handler', async () => {
    const { parent, child } = pair();
    const parentChannel = new IpcChannel<ParentSays, ChildSays>(parent);
    const childChannel = new IpcChannel<ChildSays, ParentSays>(child);
    parentChannel.notify('hello', 'one');
    await new Promise((resolve) => setTimeout(resolve, 10));
    const heard: string[] = [];
    childChannel.on('hello', (text) => heard.push(text));
    parentChannel.notify('hello', 'two');
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(heard).to.deep.equal(['one', 'two']);
  });

  it('gives up on an unanswered request after its timeout', async () => {
    const { parent, child } = pair();
    new IpcChannel<ChildSays, ParentSays>(child);
    await expectRejection(new IpcChannel<ParentSays, ChildSays>(parent).request('never', null, 30), 'no answer to never within 30 ms');
  });

  it('rejects pending requests when the channel closes, and new ones at once', async () => {
    const channels = pair();
    new IpcChannel<ChildSays, ParentSays>(channels.child);
    const parentChannel = new IpcChannel<ParentSays, ChildSays>(channels.parent);
    const pending = parentChannel.request('never', null, 5000);
    channels.close();
    await expectRejection(pending, 'the IPC channel closed before the answer');
    await expectRejection(parentChannel.request('never', null, 5000), 'the IPC channel is closed');
    expect(parentChannel.notify('hello', 'x')).to.equal(false);
  });

  it("rejects a request whose send failed with the send's own error, code and all (EPIPE: the other side is dying)", async () => {
    const epipe = Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
    const failing: Endpoint = {
      send: (_message, callback) => setImmediate(() => callback(epipe)),
      on: () => undefined,
      connected: () => true,
    };
    const err = await new IpcChannel<ParentSays, ChildSays>(failing).request('never', null, 5000).then(
      () => undefined,
      (e: NodeJS.ErrnoException) => e,
    );
    // host/pool/workerRetire.ts recycles a worker only for an error without a code (no answer in time), never for this one.
    expect(err?.code).to.equal('EPIPE');
  });

  it('ignores messages that are not its own', async () => {
    const { parent, child } = pair();
    const childChannel = new IpcChannel<ChildSays, ParentSays>(child);
    childChannel.answer('add', ({ a, b }) => a + b);
    parent.send({ cmd: 'NODE_CLUSTER' } as never, () => {});
    parent.send(null as never, () => {});
    expect(await new IpcChannel<ParentSays, ChildSays>(parent).request('add', { a: 4, b: 4 }, 1000)).to.equal(8);
  });
});

async function expectRejection(promise: Promise<unknown>, message: string): Promise<void> {
  try {
    await promise;
  } catch (err) {
    expect((err as Error).message).to.contain(message);
    return;
  }
  expect.fail(`expected a rejection with ${message}`);
}
