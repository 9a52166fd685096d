// gzip and brotli through a real stack: static files (from memory, from disk, precompressed siblings) and
// controller answers through each forwarding engine, decoded and compared byte for byte with the
// uncoded answer; negotiation, Vary, variant ETags and their 304s, what is never compressed, the access
// log's %b, --compression, and curl --compressed as a real client.
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompressSync, brotliDecompressSync, constants, createBrotliDecompress, createGunzip, gunzipSync, gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { FORWARDERS } from '../../common/settings.ts';
import { eventually, makeSandbox, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';
import { requireTool } from '../helpers/tools.ts';

interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as it came, still encoded. */
  body: Buffer;
}

/** One request on its own connection; the body as raw bytes (node:http decodes nothing). */
function fetchRaw(base: string, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<RawReply> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function decoded(reply: RawReply): Buffer {
  const coding = reply.headers['content-encoding'];
  if (coding === 'gzip') return gunzipSync(reply.body);
  if (coding === 'br') return brotliDecompressSync(reply.body);
  expect(coding, 'no other coding').to.equal(undefined);
  return reply.body;
}

/** Text that compresses, `size` bytes. */
function text(size: number, word = 'compressible'): string {
  let out = '';
  for (let i = 0; out.length < size; i++) out += `${word} line ${i}\n`;
  return out.slice(0, size);
}

const PAGE = text(8 * 1024, 'page'); // compressible, held by the small-file cache
const BIG = text(300 * 1024, 'big'); // past the cache's 64 KB: streamed from disk
const PRE = text(4 * 1024, 'original');
const BIG_PRE = text(100 * 1024, 'big-original');

describe('compression of static files', function () {
  let sandbox: Sandbox;
  let stack: Running;
  const random = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 251));

  before(async function () {
    sandbox = makeSandbox();
    const put = (name: string, content: string | Buffer) => writeFileSync(join(sandbox.publicDir, name), content);
    put('page.html', PAGE);
    put('big.txt', BIG);
    put('tiny.css', 'body{color:red}\n');
    put('pixel.png', random);
    put('data.json', JSON.stringify({ rows: text(3000) }));
    // Siblings whose content says which was served.
    put('pre.js', PRE);
    put('pre.js.br', brotliCompressSync('from pre.js.br'));
    put('pre.js.gz', gzipSync('from pre.js.gz'));
    put('bigpre.txt', BIG_PRE);
    put('bigpre.txt.gz', gzipSync(`${BIG_PRE}from bigpre.txt.gz`));
    stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1']);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  for (const [path, content] of [
    ['/page.html', PAGE],
    ['/big.txt', BIG],
  ] as const) {
    for (const coding of ['gzip', 'br'] as const) {
      it(`encodes ${path} with ${coding}, decoding to the file's bytes (twice: from disk, then from memory)`, async function () {
        for (let round = 0; round < 2; round++) {
          const reply = await fetchRaw(stack.url, path, { 'Accept-Encoding': coding });
          expect(reply.status).to.equal(200);
          expect(reply.headers['content-encoding']).to.equal(coding);
          expect(reply.headers.vary).to.match(/accept-encoding/i);
          expect(reply.headers['accept-ranges']).to.equal(undefined);
          expect(reply.body.length).to.be.lessThan(content.length / 3);
          expect(decoded(reply).equals(Buffer.from(content))).to.equal(true);
          expect(reply.headers.etag).to.match(new RegExp(`^W/".*-${coding}"$`));
          // Content-Length, when there is one, is the encoded body's.
          if (reply.headers['content-length'] !== undefined) expect(Number(reply.headers['content-length'])).to.equal(reply.body.length);
        }
      });
    }
  }

  it("logs the encoded size as %b (mod_deflate's), not the file's", async function () {
    const reply = await fetchRaw(stack.url, '/big.txt?for-the-log', { 'Accept-Encoding': 'gzip' });
    expect(reply.headers['content-encoding']).to.equal('gzip');
    const line = await eventually(
      () => readLog(sandbox, 'access.log').find((l) => l.includes('"GET /big.txt?for-the-log HTTP/1.1"')),
      3000,
      'the access line',
    );
    expect(line).to.contain(`" 200 ${reply.body.length} "`);
  });

  it('chooses by q-values: br over gzip when equal, q=0 refuses, identity when weighed higher or nothing is left', async function () {
    const cases: [string, string | undefined][] = [
      ['gzip, br', 'br'],
      ['gzip, deflate, br, zstd', 'br'],
      ['br;q=0.5, gzip', 'gzip'],
      ['br;q=0, gzip;q=0.1', 'gzip'],
      ['gzip;q=0.5', 'gzip'],
      ['x-gzip', 'gzip'],
      ['*', 'br'],
      ['*;q=0.5, br;q=0', 'gzip'],
      ['gzip;q=0, br;q=0', undefined],
      ['identity', undefined],
      ['*;q=0.1, identity;q=0.5', undefined],
      ['deflate', undefined],
      ['gzip;q=0, identity;q=0', undefined],
    ];
    for (const [accept, coding] of cases) {
      for (const path of ['/page.html', '/big.txt']) {
        const reply = await fetchRaw(stack.url, path, { 'Accept-Encoding': accept });
        expect(reply.headers['content-encoding'], `${accept} for ${path}`).to.equal(coding);
        expect(reply.headers.vary, `${accept} for ${path}`).to.match(/accept-encoding/i);
      }
    }
  });

  it('says Vary: Accept-Encoding also when it does not encode a compressible file, and not on other types', async function () {
    const plain = await fetchRaw(stack.url, '/page.html');
    expect(plain.headers['content-encoding']).to.equal(undefined);
    expect(plain.headers.vary).to.equal('Accept-Encoding');
    expect(plain.body.toString()).to.equal(PAGE);
    const tiny = await fetchRaw(stack.url, '/tiny.css', { 'Accept-Encoding': 'gzip, br' });
    expect(tiny.headers['content-encoding'], 'under the 1 KB minimum').to.equal(undefined);
    expect(tiny.headers.vary).to.equal('Accept-Encoding');
    const png = await fetchRaw(stack.url, '/pixel.png', { 'Accept-Encoding': 'gzip, br' });
    expect(png.headers['content-encoding']).to.equal(undefined);
    expect(png.headers.vary).to.equal(undefined);
    expect(png.body.equals(random)).to.equal(true);
    const json = await fetchRaw(stack.url, '/data.json', { 'Accept-Encoding': 'gzip' });
    expect(json.headers['content-encoding']).to.equal('gzip');
  });

  for (const path of ['/page.html', '/big.txt']) {
    it(`answers 304 with the variant's ETag to an If-None-Match naming it, and 200 to the other coding (${path})`, async function () {
      for (let round = 0; round < 2; round++) {
        const first = await fetchRaw(stack.url, path, { 'Accept-Encoding': 'br' });
        const etag = String(first.headers.etag);
        const again = await fetchRaw(stack.url, path, { 'Accept-Encoding': 'br', 'If-None-Match': etag });
        expect(again.status).to.equal(304);
        expect(again.headers.etag).to.equal(etag);
        expect(again.headers.vary).to.match(/accept-encoding/i);
        const plain = await fetchRaw(stack.url, path);
        const identity = await fetchRaw(stack.url, path, { 'If-None-Match': String(plain.headers.etag) });
        expect(identity.status).to.equal(304);
        expect(identity.headers.etag).to.equal(plain.headers.etag);
        expect(etag).to.not.equal(plain.headers.etag);
      }
    });
  }

  it('gives a HEAD the head a GET gets, without a body', async function () {
    for (const path of ['/page.html', '/big.txt']) {
      const get = await fetchRaw(stack.url, path, { 'Accept-Encoding': 'gzip' });
      const head = await fetchRaw(stack.url, path, { 'Accept-Encoding': 'gzip' }, 'HEAD');
      expect(head.status).to.equal(200);
      expect(head.body.length).to.equal(0);
      for (const name of ['content-encoding', 'content-type', 'etag', 'vary']) expect(head.headers[name], name).to.equal(get.headers[name]);
    }
  });

  it('never encodes a range: 206 of the file as it is', async function () {
    for (const path of ['/page.html', '/big.txt']) {
      const reply = await fetchRaw(stack.url, path, { 'Accept-Encoding': 'gzip, br', Range: 'bytes=10-109' });
      expect(reply.status).to.equal(206);
      expect(reply.headers['content-encoding']).to.equal(undefined);
      expect(reply.headers.vary).to.equal('Accept-Encoding');
      expect(reply.body.toString()).to.equal((path === '/big.txt' ? BIG : PAGE).slice(10, 110));
    }
  });

  it('serves precompressed siblings for their coding, in the client order, with the file type', async function () {
    for (let round = 0; round < 2; round++) {
      const br = await fetchRaw(stack.url, '/pre.js', { 'Accept-Encoding': 'gzip, br' });
      expect(br.headers['content-encoding']).to.equal('br');
      expect(br.headers['content-type']).to.match(/^(text|application)\/javascript; charset=utf-8$/i);
      expect(br.headers.vary).to.equal('Accept-Encoding');
      expect(decoded(br).toString()).to.equal('from pre.js.br');
      expect(Number(br.headers['content-length'])).to.equal(br.body.length);
      const gz = await fetchRaw(stack.url, '/pre.js', { 'Accept-Encoding': 'gzip, br;q=0.5' });
      expect(gz.headers['content-encoding']).to.equal('gzip');
      expect(decoded(gz).toString()).to.equal('from pre.js.gz');
      const again = await fetchRaw(stack.url, '/pre.js', { 'Accept-Encoding': 'gzip', 'If-None-Match': String(gz.headers.etag) });
      expect(again.status).to.equal(304);
      const plain = await fetchRaw(stack.url, '/pre.js');
      expect(plain.body.toString()).to.equal(PRE);
      const range = await fetchRaw(stack.url, '/pre.js', { 'Accept-Encoding': 'gzip', Range: 'bytes=0-7' });
      expect(range.status).to.equal(206);
      expect(range.body.toString()).to.equal(PRE.slice(0, 8));
    }
    const big = await fetchRaw(stack.url, '/bigpre.txt', { 'Accept-Encoding': 'br, gzip' });
    expect(big.headers['content-encoding'], 'no .br: the .gz sibling, not brotli on the fly').to.equal('gzip');
    expect(decoded(big).toString().endsWith('from bigpre.txt.gz')).to.equal(true);
  });

  it('forgets encoded forms kept in memory when the file changes', async function () {
    const path = '/changing.html';
    writeFileSync(join(sandbox.publicDir, 'changing.html'), text(4000, 'before'));
    await fetchRaw(stack.url, path, { 'Accept-Encoding': 'br' }); // from disk; remembered
    const before = await fetchRaw(stack.url, path, { 'Accept-Encoding': 'br' });
    expect(decoded(before).toString()).to.equal(text(4000, 'before'));
    writeFileSync(join(sandbox.publicDir, 'changing.html'), text(4000, 'after!'));
    await eventually(
      async () => {
        const reply = await fetchRaw(stack.url, path, { 'Accept-Encoding': 'br' });
        return decoded(reply).toString() === text(4000, 'after!') ? true : undefined;
      },
      3000,
      'the new content, encoded',
    );
  });

  it('is decoded by curl --compressed, a real client', async function () {
    const curl = requireTool(this, 'curl');
    for (const path of ['/page.html', '/big.txt']) {
      const { stdout } = await promisify(execFile)(curl, ['-sS', '--compressed', '-D', '-', `${stack.url}${path}`], {
        maxBuffer: 4 * 1024 * 1024,
      });
      const [head, body] = [stdout.slice(0, stdout.indexOf('\r\n\r\n')), stdout.slice(stdout.indexOf('\r\n\r\n') + 4)];
      expect(head).to.match(/^content-encoding: (br|gzip)\r?$/im);
      expect(body).to.equal(path === '/big.txt' ? BIG : PAGE);
    }
  });
});

/** A controller answer as text of `size` bytes, with or without its own headers. */
const CONTROLLERS: Record<string, string> = {
  Json: `export default () => ({ rows: ${JSON.stringify(text(20_000, 'json'))} });\n`,
  Small: `export default () => ({ ok: true });\n`,
  // Past the 64 KB collected in one piece: goes through a zlib stream, with its declared length.
  Large: `export default () => new Response(${JSON.stringify(text(200_000, 'large'))}, { headers: { 'content-type': 'text/plain' } });\n`,
  // A Response with its own ETag, honouring If-None-Match itself (weak comparison).
  Tagged: `export default ({ headers }: any) => {
    const tags = String(headers['if-none-match'] ?? '').replace(/W\\//g, '');
    if (tags.includes('"v1"')) return new Response(null, { status: 304, headers: { etag: '"v1"' } });
    return new Response(${JSON.stringify(text(5000, 'tagged'))}, { headers: { etag: '"v1"', 'content-type': 'text/plain; charset=utf-8' } });
  };\n`,
  // Already encoded by the controller: it must reach the client encoded once.
  Encoded: `import { gzipSync } from 'node:zlib';
  export default () => new Response(gzipSync(${JSON.stringify(text(5000, 'own'))}), { headers: { 'content-encoding': 'gzip', 'content-type': 'text/plain' } });\n`,
  NoTransform: `export default () => new Response(${JSON.stringify(text(5000))}, { headers: { 'cache-control': 'no-transform', 'content-type': 'text/plain' } });\n`,
  Binary: `export default () => new Response(new Uint8Array(5000), { headers: { 'content-type': 'application/octet-stream' } });\n`,
};

/**
 * A controller that sends a first piece, then a second once the test has seen the first decoded (a marker
 * file), or after 3 s, saying so, when the first was held back.
 */
function streamController(marker: string): string {
  return `export default () => {
    const encoder = new TextEncoder();
    const stream = new ReadableStream({
      async start(controller) {
        controller.enqueue(encoder.encode('first piece\\n'));
        const seen = () => require('node:fs').existsSync(${JSON.stringify(marker)});
        for (let i = 0; i < 300 && !seen(); i++) await new Promise((r) => setTimeout(r, 10));
        controller.enqueue(encoder.encode(seen() ? 'second piece\\n' : 'second piece, sent without the first being seen\\n'));
        controller.close();
      },
    });
    return new Response(stream, { headers: { 'content-type': 'text/event-stream' } });
  };\n`;
}

for (const forwarder of FORWARDERS) {
  describe(`compression of controller answers (${forwarder})`, function () {
    let sandbox: Sandbox;
    let stack: Running;

    before(async function () {
      sandbox = makeSandbox();
      for (const [name, source] of Object.entries(CONTROLLERS)) writeFileSync(join(sandbox.controllers, `${name}.ts`), source);
      // Streamed answers are what is measured here: PHP's output_buffering off sends each piece as it comes.
      stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1', '--forwarder', forwarder, '--output-buffering', '0']);
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    for (const coding of ['gzip', 'br'] as const) {
      it(`encodes a JSON answer with ${coding}, decoding to the uncoded answer, and logs the encoded size`, async function () {
        const plain = await fetchRaw(stack.url, '/External/Json');
        expect(plain.headers['content-encoding']).to.equal(undefined);
        expect(plain.headers.vary).to.equal('Accept-Encoding');
        const reply = await fetchRaw(stack.url, `/External/Json?${coding}`, { 'Accept-Encoding': `${coding}` });
        expect(reply.headers['content-encoding']).to.equal(coding);
        expect(reply.headers['content-length']).to.equal(undefined);
        expect(reply.headers.vary).to.equal('Accept-Encoding');
        expect(reply.body.length).to.be.lessThan(plain.body.length / 3);
        expect(decoded(reply).equals(plain.body)).to.equal(true);
        const line = await eventually(
          () => readLog(sandbox, 'access.log').find((l) => l.includes(`"GET /External/Json?${coding} HTTP/1.1"`)),
          3000,
          'the access line',
        );
        expect(line).to.contain(`" 200 ${reply.body.length} "`);
      });
    }

    it('encodes brotli on the fly at quality 2, gzip at level 6: the bytes each makes of the uncoded answer', async function () {
      const plain = await fetchRaw(stack.url, '/External/Json');
      // About 20 KB: the smallest window that holds it is 32 KB (15 bits), gzip's default.
      expect(plain.body.length).to.be.within(16 * 1024, 32 * 1024 - 262);
      const br = await fetchRaw(stack.url, '/External/Json', { 'Accept-Encoding': 'br' });
      const quality = (q: number) =>
        brotliCompressSync(plain.body, {
          params: {
            [constants.BROTLI_PARAM_QUALITY]: q,
            [constants.BROTLI_PARAM_LGWIN]: 15,
            [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
            [constants.BROTLI_PARAM_SIZE_HINT]: plain.body.length,
          },
        });
      expect(quality(2).equals(quality(4)), 'the qualities differ on this answer').to.equal(false);
      expect(br.body.equals(quality(2))).to.equal(true);
      const gzip = await fetchRaw(stack.url, '/External/Json', { 'Accept-Encoding': 'gzip' });
      expect(gzip.body.equals(gzipSync(plain.body, { level: 6 }))).to.equal(true);
    });

    it('streams a large answer through the encoder, and survives a client that leaves in the middle', async function () {
      for (const coding of ['gzip', 'br']) {
        const reply = await fetchRaw(stack.url, '/External/Large', { 'Accept-Encoding': coding });
        expect(reply.headers['content-encoding']).to.equal(coding);
        expect(decoded(reply).toString()).to.equal(text(200_000, 'large'));
      }
      const url = new URL(stack.url);
      await new Promise<void>((resolve, reject) => {
        const req = request(
          { host: url.hostname, port: url.port, path: '/External/Large', headers: { 'Accept-Encoding': 'br' }, agent: false },
          (res) => {
            res.once('data', () => {
              req.destroy();
              resolve();
            });
          },
        );
        req.on('error', reject);
        req.end();
      });
      const after = await fetchRaw(stack.url, '/External/Large', { 'Accept-Encoding': 'gzip' });
      expect(decoded(after).toString()).to.equal(text(200_000, 'large'));
    });

    it("gives a controller's ETag a variant that revalidates to 304 through the controller", async function () {
      const reply = await fetchRaw(stack.url, '/External/Tagged', { 'Accept-Encoding': 'gzip' });
      expect(reply.headers['content-encoding']).to.equal('gzip');
      expect(reply.headers.etag).to.equal('W/"v1-gzip"');
      expect(decoded(reply).toString()).to.equal(text(5000, 'tagged'));
      const again = await fetchRaw(stack.url, '/External/Tagged', { 'Accept-Encoding': 'gzip', 'If-None-Match': 'W/"v1-gzip"' });
      expect(again.status).to.equal(304);
      expect(again.headers.etag).to.equal('W/"v1-gzip"');
      const plain = await fetchRaw(stack.url, '/External/Tagged');
      expect(plain.headers.etag).to.equal('"v1"');
    });

    it('passes an answer the controller encoded itself untouched, and never encodes what must not be', async function () {
      const own = await fetchRaw(stack.url, '/External/Encoded', { 'Accept-Encoding': 'gzip, br' });
      expect(own.headers['content-encoding']).to.equal('gzip');
      expect(gunzipSync(own.body).toString()).to.equal(text(5000, 'own'));
      const small = await fetchRaw(stack.url, '/External/Small', { 'Accept-Encoding': 'gzip, br' });
      expect(small.headers['content-encoding']).to.equal(undefined);
      expect(small.headers.vary).to.equal('Accept-Encoding');
      expect(JSON.parse(small.body.toString())).to.deep.equal({ ok: true });
      const noTransform = await fetchRaw(stack.url, '/External/NoTransform', { 'Accept-Encoding': 'gzip, br' });
      expect(noTransform.headers['content-encoding']).to.equal(undefined);
      expect(noTransform.body.toString()).to.equal(text(5000));
      const binary = await fetchRaw(stack.url, '/External/Binary', { 'Accept-Encoding': 'gzip, br' });
      expect(binary.headers['content-encoding']).to.equal(undefined);
      expect(binary.headers.vary).to.equal(undefined);
      expect(binary.body.length).to.equal(5000);
      const ranged = await fetchRaw(stack.url, '/External/Json', { 'Accept-Encoding': 'gzip, br', Range: 'bytes=0-9' });
      expect(ranged.headers['content-encoding']).to.equal(undefined);
      const head = await fetchRaw(stack.url, '/External/Json', { 'Accept-Encoding': 'br' }, 'HEAD');
      expect(head.headers['content-encoding']).to.equal('br');
      expect(head.body.length).to.equal(0);
    });

    for (const coding of ['gzip', 'br'] as const) {
      it(`streams an answer that comes in pieces: the first piece arrives decoded before the second is sent (${coding})`, async function () {
        const marker = join(sandbox.dir, `go-on-${coding}`);
        writeFileSync(join(sandbox.controllers, `Stream${coding}.ts`), streamController(marker));
        const url = new URL(stack.url);
        const received = await new Promise<string>((resolve, reject) => {
          const req = request(
            { host: url.hostname, port: url.port, path: `/External/Stream${coding}`, headers: { 'Accept-Encoding': coding }, agent: false },
            (res) => {
              expect(res.headers['content-encoding']).to.equal(coding);
              const decoder = coding === 'gzip' ? createGunzip() : createBrotliDecompress();
              let textSoFar = '';
              decoder.on('data', (chunk: Buffer) => {
                textSoFar += chunk.toString();
                // Only now may the controller go on: had the proxy held the first piece, this would never come.
                if (textSoFar.includes('first piece') && !existsSync(marker)) writeFileSync(marker, '');
              });
              decoder.on('end', () => resolve(textSoFar));
              decoder.on('error', reject);
              res.pipe(decoder);
            },
          );
          req.on('error', reject);
          req.end();
        });
        expect(received).to.equal('first piece\nsecond piece\n');
      });
    }
  });
}

describe('--compression', function () {
  let sandbox: Sandbox;
  let stack: Running | undefined;

  before(function () {
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.publicDir, 'page.html'), PAGE);
    writeFileSync(join(sandbox.controllers, 'Json.ts'), CONTROLLERS.Json);
  });

  afterEach(async function () {
    await stack?.stop();
    stack = undefined;
  });

  after(function () {
    sandbox?.remove();
  });

  it('off: nothing is encoded and nothing varies; a SIGHUP with gzip in the --config file turns it on', async function () {
    const config = join(sandbox.dir, 'extqs.conf');
    writeFileSync(config, 'COMPRESSION=off\n');
    stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1', '--config', config]);
    for (const path of ['/page.html', '/External/Json']) {
      const reply = await fetchRaw(stack.url, path, { 'Accept-Encoding': 'gzip, br' });
      expect(reply.headers['content-encoding'], path).to.equal(undefined);
      expect(reply.headers.vary, path).to.equal(undefined);
    }
    writeFileSync(config, 'COMPRESSION=gzip\n');
    stack.child.kill('SIGHUP');
    await eventually(
      async () => {
        const reply = await fetchRaw(stack!.url, '/External/Json', { 'Accept-Encoding': 'gzip, br' });
        return reply.headers['content-encoding'] === 'gzip' ? true : undefined;
      },
      5000,
      'gzip after the SIGHUP',
    );
    const page = await fetchRaw(stack.url, '/page.html', { 'Accept-Encoding': 'gzip, br' });
    expect(page.headers['content-encoding']).to.equal('gzip');
    expect(decoded(page).toString()).to.equal(PAGE);
  });

  it('gzip: a client that accepts only br gets the answer as it is; one that accepts both gets gzip', async function () {
    stack = await startStack(sandbox, ['--workers', '1', '--proxy-workers', '1', '--compression', 'gzip']);
    for (const path of ['/page.html', '/External/Json']) {
      const brOnly = await fetchRaw(stack.url, path, { 'Accept-Encoding': 'br' });
      expect(brOnly.headers['content-encoding'], path).to.equal(undefined);
      expect(brOnly.headers.vary, path).to.equal('Accept-Encoding');
      const both = await fetchRaw(stack.url, path, { 'Accept-Encoding': 'br, gzip' });
      expect(both.headers['content-encoding'], path).to.equal('gzip');
    }
  });
});
