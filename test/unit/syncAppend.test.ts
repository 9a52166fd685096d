import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { syncAppendStream } from '../../common/syncAppend.ts';

describe('syncAppendStream', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'extqs-append-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('appends single and batched (writev) writes in order, after what the file held, and closes the file', async () => {
    const path = join(dir, 'a.log');
    writeFileSync(path, 'before\n');
    const stream = syncAppendStream(openSync(path, 'a'), (err) => expect.fail(err.message));
    stream.write('one\n');
    stream.cork();
    for (const line of ['two\n', 'three\n', 'four\n']) stream.write(line);
    stream.uncork();
    const closed = once(stream, 'close');
    stream.end('five\n');
    await closed;
    expect(readFileSync(path, 'utf8')).to.equal('before\none\ntwo\nthree\nfour\nfive\n');
  });

  it('reports a failed write once until a write succeeds, and goes on taking lines', async () => {
    const path = join(dir, 'r.log');
    writeFileSync(path, '');
    const readOnly = openSync(path, 'r');
    const errors: string[] = [];
    const stream = syncAppendStream(readOnly, (err) => errors.push((err as NodeJS.ErrnoException).code ?? err.message));
    stream.write('lost\n');
    stream.write('lost too\n');
    const closed = once(stream, 'close');
    stream.end();
    await closed;
    expect(errors).to.deep.equal(['EBADF']);
    expect(() => closeSync(readOnly)).to.throw(/EBADF/); // closed by the stream's end
  });
});
