import { expect } from 'chai';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { IpcChannel, childEndpoint } from '../../common/ipc.ts';
import { deliver, type EntryBatch } from '../../common/logRelay.ts';
import type { RelayTalk, TestFiles } from '../fixtures/relayWorker.ts';

const WORKER = fileURLToPath(new URL('../fixtures/relayWorker.ts', import.meta.url));

describe('logRelay', function () {
  it("carries a window's entries of every file in one message, and the rest in a flush answered before the worker exits", async function () {
    const child = fork(WORKER, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const exited = once(child, 'exit');
    const channel = new IpcChannel<RelayTalk, RelayTalk>(childEndpoint(child));
    const messages: string[] = [];
    const written: string[] = [];
    // The primary's side formats each entry where it "writes the file".
    const write = (batch: EntryBatch<TestFiles>) =>
      deliver(batch, { 'a.log': ({ n }) => written.push(`a ${n}`), 'b.log': ({ text }) => written.push(`b ${text}`) });
    channel.on('log', (batch) => {
      messages.push(`log ${JSON.stringify(batch)}`);
      write(batch);
    });
    channel.answer('flush', (batch) => {
      messages.push(`flush ${JSON.stringify(batch)}`);
      write(batch);
      return null;
    });
    const [code] = await exited;
    expect(code).to.equal(0);
    // Entries of two turns in one message, sent when the window's third came, not a minute later.
    expect(messages).to.deep.equal(['log {"a.log":[{"n":1},{"n":2}],"b.log":[{"text":"one"}]}', 'flush {"b.log":[{"text":"last"}]}']);
    expect(written).to.deep.equal(['a 1', 'a 2', 'b one', 'b last']);
  });

  it('sends entries when their window has passed, with no drain', async function () {
    const child = fork(WORKER, ['windowed'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const exited = once(child, 'exit');
    try {
      const channel = new IpcChannel<RelayTalk, RelayTalk>(childEndpoint(child));
      const batch = await new Promise((resolve) => channel.on('log', resolve));
      expect(batch).to.deep.equal({ 'a.log': [{ n: 3 }] });
    } finally {
      child.kill();
      await exited;
    }
  });
});
