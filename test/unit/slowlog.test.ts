import { expect } from 'chai';
import { formatFrames, slowlogMessage, SourceMaps, type PausedFrame, type SlowCall } from '../../host/worker/slowlog.ts';

const FILE = '/www/controllers/Spin.ts';
const call: SlowCall = { name: 'Spin', file: FILE, requestId: 'r1', version: 'v1', what: 'GET /External/Spin' };
/** Bundle line 2 (index 1) comes from source line 6 (index 5) of Spin.ts. */
const MAP = JSON.stringify({ version: 3, sources: ['Spin.ts'], names: [], mappings: 'AAAA;AAKA' });

const frame = (functionName: string, url: string, lineNumber: number): PausedFrame => ({ functionName, url, lineNumber, columnNumber: 0 });
const stuck = [
  frame('spinForever', `file://${FILE}`, 1),
  frame('', `file://${FILE}`, 1),
  frame('runControllerCall', 'file:///srv/extqs/build/host/controllerCall.js', 24),
  frame('processTicksAndRejections', 'node:internal/process/task_queues', 94),
];

describe('the slowlog entry', () => {
  it("maps the call's frames to its source lines and leaves out the host's frames below them", () => {
    const maps = new SourceMaps();
    maps.add(FILE, 'v1', MAP);
    expect(formatFrames(stuck, call, maps)).to.deep.equal([`spinForever ${FILE}:6`, `(anonymous) ${FILE}:6`]);
  });

  it("shows the bundle's line when it has no map of the call's version", () => {
    const maps = new SourceMaps();
    maps.add(FILE, 'v0', MAP);
    expect(formatFrames(stuck, call, maps).slice(0, 1)).to.deep.equal([`spinForever ${FILE}:2`]);
  });

  it('shows every frame when none is the call’s (the thread ran something else)', () => {
    const other = stuck.slice(2);
    expect(formatFrames(other, call, new SourceMaps())).to.deep.equal([
      'runControllerCall /srv/extqs/build/host/controllerCall.js:25',
      'processTicksAndRejections node:internal/process/task_queues:95',
    ]);
  });

  it('has a header naming the call, then a line a frame or why there is none', () => {
    expect(slowlogMessage(call, { slow: 1049 }, 42, ['spinForever /a.ts:6'])).to.equal(
      `Slow controller call: Spin (${FILE}) in GET /External/Spin has run 1.0 s, worker 42; stack:\nspinForever /a.ts:6`,
    );
    expect(slowlogMessage(call, { killed: 5100 }, 42, 'not-paused')).to.match(
      /was killed with its worker after 5\.1 s \(max_execution_time\), worker 42; stack:\n\(the thread did not reach JavaScript/,
    );
    expect(slowlogMessage(call, { dropped: 4500 }, 42, 'awaiting')).to.contain('was dropped after 4.5 s (max_execution_time)');
  });
});
