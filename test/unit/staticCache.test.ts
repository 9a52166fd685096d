import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { StaticCache } from '../../proxy/static/staticCache.ts';

describe('the static file cache', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'extqs-cache-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const headersFor = (size: number) => ({ 'content-length': String(size), etag: 'W/"x"' });

  it('keeps a small file with the headers it was served with', async () => {
    writeFileSync(join(dir, 'a.txt'), 'hello');
    const cache = new StaticCache(dir);
    await cache.rememberFile('/a.txt', join(dir, 'a.txt'), headersFor(5), cache.version);
    const entry = cache.get('/a.txt');
    expect(entry).to.deep.include({ kind: 'file' });
    expect(entry && entry.kind === 'file' && entry.body.toString()).to.equal('hello');
  });

  it('does not keep what was looked up before a change (the generation moved on)', async () => {
    writeFileSync(join(dir, 'a.txt'), 'hello');
    const cache = new StaticCache(dir);
    const version = cache.version;
    cache.clear(); // a change seen by the watcher while the lookup ran
    const stale = cache.rememberFile('/a.txt', join(dir, 'a.txt'), headersFor(5), version);
    cache.rememberMissing('/gone.ico', join(dir, 'gone.ico'), version);
    // A control looked up after the change is kept: proof that a settled remember has decided.
    await Promise.all([stale, cache.rememberFile('/control.txt', join(dir, 'a.txt'), headersFor(5), cache.version)]);
    expect(cache.get('/control.txt')?.kind).to.equal('file');
    expect(cache.get('/a.txt')).to.equal(undefined);
    expect(cache.get('/gone.ico')).to.equal(undefined);
  });

  it('does not keep a file whose size no longer matches the headers sent', async () => {
    writeFileSync(join(dir, 'a.txt'), 'hello, longer now');
    const cache = new StaticCache(dir);
    await Promise.all([
      cache.rememberFile('/a.txt', join(dir, 'a.txt'), headersFor(5), cache.version),
      cache.rememberFile('/control.txt', join(dir, 'a.txt'), headersFor(17), cache.version),
    ]);
    expect(cache.get('/control.txt')?.kind).to.equal('file');
    expect(cache.get('/a.txt')).to.equal(undefined);
  });

  it('forgets a file changed again within 50 ms of a change it saw (chokidar drops that second event)', async () => {
    const file = join(dir, 'page.html');
    writeFileSync(file, 'first');
    const cache = new StaticCache(dir);
    await cache.watch((err) => expect.fail(String(err)));
    try {
      writeFileSync(file, 'second');
      for (let i = 0; i < 200 && cache.version === 0; i++) await new Promise((r) => setTimeout(r, 5));
      expect(cache.version, 'the first change was seen').to.be.greaterThan(0);
      await cache.rememberFile('/page.html', file, headersFor(6), cache.version); // served 'second'
      writeFileSync(file, 'third!'); // the same size, well within chokidar's 50 ms
      let body: string | undefined = 'second';
      for (let i = 0; i < 100 && body === 'second'; i++) {
        await new Promise((r) => setTimeout(r, 10));
        const entry = cache.get('/page.html');
        body = entry?.kind === 'file' ? entry.body.toString() : undefined;
      }
      expect(body, 'still serving the content before the last write').not.to.equal('second');
    } finally {
      await cache.close();
    }
  });

  it('keeps only paths without escapes, so %2f variants of one file cannot fill memory', async () => {
    writeFileSync(join(dir, 'a.txt'), 'hello');
    const cache = new StaticCache(dir);
    const escaped = cache.rememberFile('/x%2fa.txt', join(dir, 'a.txt'), headersFor(5), cache.version);
    cache.rememberMissing('/x%2fnone', join(dir, 'none'), cache.version);
    await Promise.all([escaped, cache.rememberFile('/x/a.txt', join(dir, 'a.txt'), headersFor(5), cache.version)]);
    expect(cache.get('/x/a.txt')?.kind).to.equal('file');
    expect(cache.get('/x%2fa.txt')).to.equal(undefined);
    expect(cache.get('/x%2fnone')).to.equal(undefined);
  });

  it('bounds misses apart from files: a flood of missing paths does not push a file out', async () => {
    writeFileSync(join(dir, 'hot.txt'), 'hot');
    const cache = new StaticCache(dir, { maxMisses: 10 });
    await cache.rememberFile('/hot.txt', join(dir, 'hot.txt'), headersFor(3), cache.version);
    for (let i = 0; i < 100; i++) cache.rememberMissing(`/miss${i}`, join(dir, `miss${i}`), cache.version);
    expect(cache.get('/hot.txt')?.kind).to.equal('file');
    expect(cache.get('/miss0')).to.equal(undefined);
    expect(cache.get('/miss99')?.kind).to.equal('missing');
  });

  it('bounds the bytes it holds, dropping the oldest files first', async () => {
    const cache = new StaticCache(dir, { maxTotalBytes: 10 });
    for (const name of ['a', 'b', 'c']) {
      writeFileSync(join(dir, name), '12345');
      await cache.rememberFile(`/${name}`, join(dir, name), headersFor(5), cache.version);
    }
    expect(cache.get('/a')).to.equal(undefined);
    expect(cache.get('/b')?.kind).to.equal('file');
    expect(cache.get('/c')?.kind).to.equal('file');
  });

  it('empties itself when the watched directory changes', async () => {
    writeFileSync(join(dir, 'a.txt'), 'hello');
    const cache = new StaticCache(dir);
    await cache.watch((err) => {
      throw err;
    });
    try {
      await cache.rememberFile('/a.txt', join(dir, 'a.txt'), headersFor(5), cache.version);
      expect(cache.get('/a.txt')?.kind, 'kept before the change').to.equal('file');
      writeFileSync(join(dir, 'b.txt'), 'new');
      for (let i = 0; i < 100 && cache.get('/a.txt'); i++) await new Promise((r) => setTimeout(r, 10));
      expect(cache.get('/a.txt')).to.equal(undefined);
    } finally {
      await cache.close();
    }
  });
});
