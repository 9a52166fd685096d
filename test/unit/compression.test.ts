import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { acceptableCodings, isCompressible, negotiate, originalTags, variantEtag } from '../../proxy/core/compression.ts';
import { StaticCache } from '../../proxy/static/staticCache.ts';

describe('compression', () => {
  describe('negotiate (RFC 9110 §12.5.3)', () => {
    const both = ['gzip', 'br'] as const;
    const cases: [string | undefined, string | undefined][] = [
      [undefined, undefined],
      ['', undefined],
      ['gzip', 'gzip'],
      ['gzip, br', 'br'],
      ['GZIP, BR', 'br'],
      ['br;q=0.9, gzip', 'gzip'],
      ['br;q=0, gzip;q=0.001', 'gzip'],
      ['gzip;q=0, br;q=0', undefined],
      ['*', 'br'],
      ['*;q=0', undefined],
      ['*, br;q=0', 'gzip'],
      ['x-gzip', 'gzip'],
      ['identity', undefined],
      ['identity;q=0', undefined],
      ['identity;q=1, gzip;q=0.5', undefined],
      ['identity;q=0.5, gzip;q=0.5', 'gzip'],
      ['*;q=0.1, identity;q=0.5', undefined],
      ['gzip;q=1.5', undefined], // malformed weight: the member is ignored
      ['gzip;q=abc, br', 'br'],
      ['deflate, zstd', undefined],
      ['gzip ; q=0.8 , br ; q=0.9', 'br'],
    ];
    for (const [accept, coding] of cases) {
      it(`${JSON.stringify(accept)} → ${coding ?? 'none'}`, () => {
        expect(negotiate(accept, both)).to.equal(coding);
      });
    }

    it('uses only the codings allowed', () => {
      expect(negotiate('br, gzip', ['gzip'])).to.equal('gzip');
      expect(negotiate('br', ['gzip'])).to.equal(undefined);
      expect(negotiate('br, gzip', [])).to.equal(undefined);
    });

    it('lists the acceptable codings in the client order', () => {
      expect(acceptableCodings('gzip, br;q=0.5', ['gzip', 'br'])).to.deep.equal(['gzip', 'br']);
      expect(acceptableCodings('gzip, br', ['gzip', 'br'])).to.deep.equal(['br', 'gzip']);
    });
  });

  it('knows the compressible types', () => {
    for (const type of [
      'text/html; charset=utf-8',
      'text/css',
      'application/json',
      'application/problem+json',
      'application/javascript; charset=utf-8',
      'text/javascript',
      'image/svg+xml',
      'application/xml',
      'application/atom+xml',
      'TEXT/PLAIN',
    ]) {
      expect(isCompressible(type), type).to.equal(true);
    }
    for (const type of [
      undefined,
      '',
      'image/png',
      'image/jpeg',
      'application/octet-stream',
      'font/woff2',
      'application/zip',
      'video/mp4',
    ]) {
      expect(isCompressible(type), String(type)).to.equal(false);
    }
  });

  it("names a variant's ETag inside the quotes, weak, and reads a variant's name back", () => {
    expect(variantEtag('W/"1a-2b"', 'gzip')).to.equal('W/"1a-2b-gzip"');
    expect(variantEtag('"v1"', 'br')).to.equal('W/"v1-br"');
    expect(variantEtag('unquoted', 'br')).to.equal('unquoted');
    expect(originalTags('W/"1a-2b-gzip"')).to.deep.equal({ tags: 'W/"1a-2b"', coding: 'gzip' });
    expect(originalTags('"a", W/"v1-br", "c"')).to.deep.equal({ tags: '"a", W/"v1", "c"', coding: 'br' });
    expect(originalTags('W/"1a-2b"')).to.equal(undefined);
    expect(originalTags('*')).to.equal(undefined);
  });

  describe('encoded forms in the static cache', () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'extqs-compression-'))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    const text = 'some text that compresses well\n'.repeat(100);
    const headers = {
      'content-length': String(text.length),
      etag: 'W/"c80-1"',
      'content-type': 'text/plain; charset=utf-8',
      'accept-ranges': 'bytes',
    };

    it('keeps a compressible file with its body compressed in each coding, under variant ETags', async () => {
      writeFileSync(join(dir, 'a.txt'), text);
      const cache = new StaticCache(dir);
      await cache.rememberFile('/a.txt', join(dir, 'a.txt'), headers, cache.version);
      const entry = cache.get('/a.txt');
      if (entry?.kind !== 'file' || !entry.encoded?.gzip || !entry.encoded.br) return expect.fail('no encoded forms');
      expect(gunzipSync(entry.encoded.gzip.body).toString()).to.equal(text);
      expect(brotliDecompressSync(entry.encoded.br.body).toString()).to.equal(text);
      expect(entry.encoded.gzip.headers).to.include({
        'content-encoding': 'gzip',
        etag: 'W/"c80-1-gzip"',
        'content-type': headers['content-type'],
      });
      expect(entry.encoded.br.headers['content-length']).to.equal(String(entry.encoded.br.body.length));
      expect(entry.encoded.br.headers).not.to.have.property('accept-ranges');
    });

    it('takes a precompressed sibling as the form for its coding', async () => {
      writeFileSync(join(dir, 'a.txt'), text);
      writeFileSync(join(dir, 'a.txt.gz'), gzipSync('the sibling'));
      const cache = new StaticCache(dir);
      await cache.rememberFile('/a.txt', join(dir, 'a.txt'), headers, cache.version);
      const entry = cache.get('/a.txt');
      if (entry?.kind !== 'file' || !entry.encoded?.gzip) return expect.fail('no encoded forms');
      expect(gunzipSync(entry.encoded.gzip.body).toString()).to.equal('the sibling');
      expect(entry.encoded.gzip.headers.etag).to.match(/^W\/"[0-9a-f]+-[0-9a-f]+"$/);
      expect(entry.encoded.gzip.headers.etag).not.to.equal(headers.etag);
    });

    it('keeps no encoded forms of a file under the minimum or of a type that does not compress', async () => {
      writeFileSync(join(dir, 'small.txt'), 'short');
      writeFileSync(join(dir, 'a.png'), text);
      const cache = new StaticCache(dir);
      await Promise.all([
        cache.rememberFile('/small.txt', join(dir, 'small.txt'), { ...headers, 'content-length': '5' }, cache.version),
        cache.rememberFile('/a.png', join(dir, 'a.png'), { ...headers, 'content-type': 'image/png' }, cache.version),
      ]);
      for (const path of ['/small.txt', '/a.png']) {
        const entry = cache.get(path);
        expect(entry?.kind, path).to.equal('file');
        expect(entry?.kind === 'file' && entry.encoded, path).to.equal(undefined);
      }
    });
  });
});
