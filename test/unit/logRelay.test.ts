import { expect } from 'chai';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { IpcChannel, childEndpoint } from '../../common/ipc.ts';
import { deliver, type EntryBatch } from '../../common/logRelay.ts';
import type { RelayTalk, TestFiles } from '../fixtures/relayWorker.ts';

const WORKER = fileURLToPath(new URL('../fixtures/relayWorker.ts', import.meta.url));

describe('logRelay', function () {
  it("carries a turn's entries of every file in one message, and the rest in a flush answered before the worker exits", async function () {
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
    expect(messages).to.deep.equal([
      'log {"a.log":[{"n":1}],"b.log":[{"text":"one"}]}',
      'log {"a.log":[{"n":2}]}',
      'flush {"b.log":[{"text":"last"}]}',
    ]);
    expect(written).to.deep.equal(['a 1', 'b one', 'a 2', 'b last']);
  });
});
