// HTTPS and HTTP/2 at the proxy, tried with the clients operators use: curl over h2 and HTTP/1.1,
// openssl s_client for the protocol and cipher claims, nghttp and h2load (Debian's nghttp2-client), and
// Debian's Chromium; node:http2 where a test must hold a session open across a reload or a stop.
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type ClientHttp2Session } from 'node:http2';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { expect } from 'chai';
import { curl, output, sClient } from '../helpers/clients.ts';
import { launchChromium } from '../helpers/chromium.ts';
import { get } from '../helpers/http.ts';
import { eventually, makeSandbox, readLog, ROOT, slowController, startStack, type Running, type Sandbox } from '../helpers/stack.ts';
import { makeCertificate, type CertificateFiles } from '../../tools/certificate.ts';

const portOf = (url: string) => Number(new URL(url).port);

/** The subject CN of the certificate the listener at `port` presents now (a new handshake). */
async function presentedName(port: number): Promise<string> {
  const socket = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false });
  await once(socket, 'secureConnect');
  const name: string | string[] | undefined = socket.getPeerCertificate().subject.CN;
  socket.destroy();
  return String(name);
}

/** One request on an open HTTP/2 session: its status and body. */
async function h2get(session: ClientHttp2Session, path: string): Promise<{ status: number; body: string }> {
  const stream = session.request({ ':path': path });
  const [headers] = (await once(stream, 'response')) as [Record<string, string | number>];
  let body = '';
  stream.setEncoding('utf8');
  for await (const chunk of stream) body += chunk as string;
  return { status: Number(headers[':status']), body };
}

function writeControllers(sandbox: Sandbox): void {
  writeFileSync(
    join(sandbox.controllers, 'Echo.ts'),
    `export default ({ headers }) => ({ proto: headers['x-forwarded-proto'], host: headers.host, forwardedHost: headers['x-forwarded-host'] });\n`,
  );
  writeFileSync(
    join(sandbox.controllers, 'Slow.ts'),
    `export default async ({ query }) => { await new Promise((r) => setTimeout(r, Number(query.ms ?? 3000))); return { slow: true }; };\n`,
  );
  writeFileSync(join(sandbox.controllers, 'Upload.ts'), `export default async ({ body }) => ({ length: (await body.text()).length });\n`);
}

describe('HTTPS and HTTP/2', function () {
  let sandbox: Sandbox;
  let pair: CertificateFiles;
  let stack: Running;
  let tlsPort: number;

  before(async function () {
    sandbox = makeSandbox();
    pair = makeCertificate(sandbox.dir);
    writeControllers(sandbox);
    writeFileSync(join(sandbox.publicDir, 'hello.txt'), 'hello, world\n');
    writeFileSync(join(sandbox.publicDir, 'big.txt'), 'compress me, please\n'.repeat(500));
    writeFileSync(
      join(sandbox.controllers, 'Rows.ts'),
      `export default () => ({ rows: Array.from({ length: 200 }, (_, id) => ({ id })) });\n`,
    );
    writeFileSync(join(sandbox.publicDir, 'index.html'), '<!doctype html><title>extqs</title><h1>over TLS</h1>\n');
    stack = await startStack(sandbox, [
      '--tls-port',
      '0',
      '--tls-cert',
      pair.cert,
      '--tls-key',
      pair.key,
      '--tls-redirect',
      'on',
      '--upstream-timeout',
      '1',
    ]);
    tlsPort = portOf(stack.tlsUrl!);
  });

  after(async function () {
    await stack?.stop();
    sandbox?.remove();
  });

  it('names both listeners in its ready line', function () {
    expect(stack.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(stack.tlsUrl).to.match(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it('serves a static file over HTTP/2 and HTTP/1.1 on one port (ALPN), each logged with its protocol', async function () {
    const h2 = await curl(`${stack.tlsUrl}/hello.txt`, ['--http2', '-A', 'h2-client'], pair.cert);
    expect([h2.status, h2.httpVersion, h2.body.toString()]).to.deep.equal([200, '2', 'hello, world\n']);
    const h1 = await curl(`${stack.tlsUrl}/hello.txt`, ['--http1.1', '-A', 'h1-client'], pair.cert);
    expect([h1.status, h1.httpVersion, h1.body.toString()]).to.deep.equal([200, '1.1', 'hello, world\n']);
    await eventually(() => readLog(sandbox, 'access.log').find((l) => l.includes('"GET /hello.txt HTTP/2.0" 200 13 "-" "h2-client"')));
    await eventually(() => readLog(sandbox, 'access.log').find((l) => l.includes('"GET /hello.txt HTTP/1.1" 200 13 "-" "h1-client"')));
  });

  it('answers ranges and conditional requests over HTTP/2', async function () {
    const range = await curl(`${stack.tlsUrl}/hello.txt`, ['--http2', '-r', '0-4']);
    expect([range.status, range.body.toString(), range.headers['content-range']]).to.deep.equal([206, 'hello', 'bytes 0-4/13']);
    const first = await curl(`${stack.tlsUrl}/hello.txt`, ['--http2']);
    const again = await curl(`${stack.tlsUrl}/hello.txt`, ['--http2', '-H', `If-None-Match: ${first.headers.etag}`]);
    expect([again.status, again.body.length]).to.deep.equal([304, 0]);
  });

  it('compresses text over HTTP/2, files and controller answers alike', async function () {
    const page = await curl(`${stack.tlsUrl}/big.txt`, ['--http2', '--compressed', '-H', 'Accept-Encoding: br']);
    expect([page.status, page.headers['content-encoding'], page.headers.vary]).to.deep.equal([200, 'br', 'Accept-Encoding']);
    expect(page.body.toString()).to.equal(readFileSync(join(sandbox.publicDir, 'big.txt'), 'utf8'));
    const answer = await curl(`${stack.tlsUrl}/External/Rows`, ['--http2', '--compressed', '-H', 'Accept-Encoding: gzip']);
    expect([answer.status, answer.headers['content-encoding']]).to.deep.equal([200, 'gzip']);
    expect(JSON.parse(answer.body.toString())).to.have.property('rows').with.length(200);
  });

  it('forwards an HTTP/2 request body that has no Content-Length', async function () {
    const session = connect(stack.tlsUrl!, { rejectUnauthorized: false });
    try {
      const stream = session.request({ ':method': 'POST', ':path': '/External/Upload' });
      stream.end('hello, body');
      const [headers] = (await once(stream, 'response')) as [Record<string, string | number>];
      let body = '';
      for await (const chunk of stream) body += String(chunk);
      expect([headers[':status'], JSON.parse(body)]).to.deep.equal([200, { length: 11 }]);
    } finally {
      session.close();
    }
  });

  it('forwards to the host over HTTP/1.1, saying https and the client’s authority', async function () {
    const reply = await curl(`${stack.tlsUrl}/External/Echo`, ['--http2']);
    expect([reply.status, reply.httpVersion]).to.deep.equal([200, '2']);
    const host = `127.0.0.1:${tlsPort}`;
    expect(JSON.parse(reply.body.toString())).to.deep.equal({ proto: 'https', host, forwardedHost: host });
    const h1 = await curl(`${stack.tlsUrl}/External/Echo`, ['--http1.1']);
    expect(JSON.parse(h1.body.toString())).to.include({ proto: 'https', host });
  });

  it('answers the missing controller, the missing file and the slow controller with their pages and log lines', async function () {
    const missing = await curl(`${stack.tlsUrl}/External/Latest?sn=1&no=2`, ['--http2']);
    expect(missing.status).to.equal(500);
    expect(missing.body.toString()).to.contain('<title>500 Internal Server Error</title>');
    const requestId = missing.headers['x-request-id'];
    await eventually(() =>
      readLog(sandbox, 'error.log').find(
        (l) => l.includes('End of script output before headers: /External/Latest') && l.includes(requestId),
      ),
    );
    const favicon = await curl(`${stack.tlsUrl}/favicon.ico`, ['--http2']);
    expect([favicon.status, favicon.body.toString()]).to.satisfy(
      ([status, body]: [number, string]) => status === 404 && body.includes('404 Not Found'),
    );
    const slow = await curl(`${stack.tlsUrl}/External/Slow?ms=3000`, ['--http2']);
    expect(slow.status).to.equal(504);
    await eventually(() => readLog(sandbox, 'access.log').find((l) => l.includes('"GET /External/Slow?ms=3000 HTTP/2.0" 504 ')));
  });

  it('sends plain HTTP to HTTPS with 301 (--tls-redirect on), naming the port it bound', async function () {
    const reply = await get(stack.url, '/External/Latest?sn=1&no=2', { headers: { Host: 'example.test:8080' } });
    expect(reply.status).to.equal(301);
    expect(reply.headers.location).to.equal(`https://example.test:${tlsPort}/External/Latest?sn=1&no=2`);
    // A Host that is no host name is not echoed: the address the client reached stands instead.
    const odd = await get(stack.url, '/x', { headers: { Host: 'evil.test/"><script>' } });
    expect(odd.headers.location).to.equal(`https://127.0.0.1:${tlsPort}/x`);
  });

  it('serves certbot’s HTTP-01 challenge on plain HTTP despite the redirect, and no other dotfile', async function () {
    mkdirSync(join(sandbox.publicDir, '.well-known', 'acme-challenge'), { recursive: true });
    writeFileSync(join(sandbox.publicDir, '.well-known', 'acme-challenge', 'token-123'), 'token-123.thumbprint');
    writeFileSync(join(sandbox.publicDir, '.well-known', '.secret'), 'hidden');
    const challenge = await get(stack.url, '/.well-known/acme-challenge/token-123');
    expect([challenge.status, challenge.body]).to.deep.equal([200, 'token-123.thumbprint']);
    expect((await curl(`${stack.tlsUrl}/.well-known/.secret`, ['--http2'])).status).to.equal(404);
  });

  it('carries many streams on one connection (nghttp, h2load), one access-log line per stream', async function () {
    const shown = await output('nghttp', ['-nv', `${stack.tlsUrl}/hello.txt`, `${stack.tlsUrl}/External/Echo`]);
    expect(shown).to.contain('recv SETTINGS frame');
    expect(shown).to.match(/SETTINGS_MAX_CONCURRENT_STREAMS\(0x03\):100/);
    expect(shown.match(/recv HEADERS frame/g)).to.have.length(2);
    const before = readLog(sandbox, 'access.log').filter((l) => l.includes('h2load-marker')).length;
    const load = await output('h2load', [
      '-n',
      '200',
      '-c',
      '2',
      '-m',
      '10',
      '-H',
      'User-Agent: h2load-marker',
      `${stack.tlsUrl}/hello.txt`,
    ]);
    expect(load).to.match(/requests: 200 total, 200 started, 200 done, 200 succeeded, 0 failed, 0 errored/);
    expect(load).to.match(/status codes: 200 2xx/);
    expect(load).to.match(/Application protocol: h2/);
    await eventually(() => {
      const lines = readLog(sandbox, 'access.log').filter((l) => l.includes('h2load-marker'));
      return lines.length - before === 200 && lines.every((l) => l.includes('HTTP/2.0" 200 13')) ? true : undefined;
    }, 5000);
  });

  it('speaks TLS 1.2 and 1.3 only, with forward-secret AEAD ciphers, no compression and no renegotiation', async function () {
    const tls13 = await sClient(tlsPort, ['-tls1_3', '-alpn', 'h2'], '');
    expect(tls13).to.match(/New, TLSv1\.3, Cipher is TLS_AES_(128|256)_GCM_SHA(256|384)/);
    expect(tls13).to.contain('ALPN protocol: h2');
    expect(tls13).to.contain('Compression: NONE');
    const tls12 = await sClient(tlsPort, ['-tls1_2', '-alpn', 'http/1.1'], '');
    expect(tls12).to.match(/New, TLSv1\.2, Cipher is ECDHE-ECDSA-AES(128|256)-GCM-SHA(256|384)/);
    expect(tls12).to.contain('ALPN protocol: http/1.1');
    for (const old of ['-tls1_1', '-tls1']) {
      expect(await sClient(tlsPort, [old, '-cipher', 'DEFAULT@SECLEVEL=0'], ''), old).to.contain('alert protocol version');
    }
    // Without forward secrecy (RSA key exchange), and CBC: both outside Mozilla's intermediate list.
    for (const cipher of ['AES128-GCM-SHA256', 'ECDHE-ECDSA-AES128-SHA']) {
      expect(await sClient(tlsPort, ['-tls1_2', '-cipher', cipher], ''), cipher).to.contain('alert handshake failure');
    }
    // `R` asks s_client to renegotiate once the handshake is done.
    const renegotiation = await sClient(tlsPort, ['-tls1_2'], 'R\n');
    expect(renegotiation).to.contain('RENEGOTIATING');
    expect(renegotiation).to.contain('no renegotiation');
  });

  it('counts HTTP/2 requests in /metrics, scraped over HTTP/2', async function () {
    const staticOk = async () => {
      const metrics = await curl(`${stack.tlsUrl}/metrics`, ['--http2']);
      expect([metrics.status, metrics.httpVersion]).to.deep.equal([200, '2']);
      return Number(
        /^extqs_http_requests_total\{kind="static",method="GET",status_class="2xx"\} (\d+)$/m.exec(metrics.body.toString())?.[1] ?? 0,
      );
    };
    const before = await staticOk();
    for (let i = 0; i < 3; i++) expect((await curl(`${stack.tlsUrl}/hello.txt`, ['--http2'])).httpVersion).to.equal('2');
    // With two proxy workers the scrape sums both; a request is counted as its response closes.
    await eventually(async () => ((await staticOk()) === before + 3 ? true : undefined));
  });

  it('serves a browser over HTTP/2 (Chromium)', async function () {
    const browser = await launchChromium();
    try {
      const page = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
      const response = await page.goto(`${stack.tlsUrl}/`);
      expect(response?.status()).to.equal(200);
      expect(await page.locator('h1').innerText()).to.equal('over TLS');
      const protocol = await page.evaluate("performance.getEntriesByType('navigation')[0].nextHopProtocol");
      expect(protocol).to.equal('h2');
    } finally {
      await browser.close();
    }
  });
});

describe('HTTPS settings', function () {
  let sandbox: Sandbox;
  let running: Running | undefined;
  beforeEach(() => (sandbox = makeSandbox()));
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    sandbox.remove();
  });

  const proxy = (args: string[]) =>
    spawnSync(
      process.execPath,
      ['bin/extqs.js', 'proxy', '--www', sandbox.www, '--logs', sandbox.logs, '--upstream', 'http://127.0.0.1:9', ...args],
      {
        cwd: ROOT,
        encoding: 'utf8',
      },
    );

  it('refuses a certificate without its key, a key that is not the certificate’s, and a redirect without HTTPS', function () {
    const one = makeCertificate(sandbox.dir, 'one');
    const other = makeCertificate(sandbox.dir, 'other');
    const alone = proxy(['--tls-cert', one.cert]);
    expect(alone.status).to.equal(2);
    expect(alone.stderr).to.contain(
      '--tls-key (EXTQS_TLS_KEY) must be given together with --tls-cert (EXTQS_TLS_CERT), or neither, got ""',
    );
    const mismatched = proxy(['--tls-cert', one.cert, '--tls-key', other.key]);
    expect(mismatched.status).to.equal(2);
    expect(mismatched.stderr).to.contain(`--tls-key (EXTQS_TLS_KEY) must be the private key of the certificate in --tls-cert`);
    expect(mismatched.stderr).to.contain(`is not the key of the certificate in ${one.cert}`);
    const notPem = proxy(['--tls-cert', join(ROOT, 'package.json'), '--tls-key', one.key]);
    expect(notPem.stderr).to.contain('--tls-cert (EXTQS_TLS_CERT) must be a PEM file holding a certificate, then its chain');
    const redirect = proxy(['--tls-redirect', 'on']);
    expect(redirect.stderr).to.contain('--tls-redirect (EXTQS_TLS_REDIRECT) must be off without --tls-cert');
  });

  it('on SIGHUP serves a renewed certificate to new handshakes, keeps open sessions, and keeps the old pair when the new one is bad', async function () {
    const pair = makeCertificate(sandbox.dir, 'live', '/CN=first');
    running = await startStack(sandbox, ['--tls-port', '0', '--tls-cert', pair.cert, '--tls-key', pair.key]);
    const port = portOf(running.tlsUrl!);
    expect(await presentedName(port)).to.equal('first');
    const session = connect(running.tlsUrl!, { rejectUnauthorized: false });
    try {
      expect((await h2get(session, '/missing.txt')).status).to.equal(404);
      // certbot renews in place: new files under the same names.
      const renewed = makeCertificate(sandbox.dir, 'renewed', '/CN=second');
      writeFileSync(pair.cert, readFileSync(renewed.cert));
      writeFileSync(pair.key, readFileSync(renewed.key));
      running.child.kill('SIGHUP');
      await eventually(async () => ((await presentedName(port)) === 'second' ? true : undefined), 5000, 'the renewed certificate');
      expect((await h2get(session, '/missing.txt')).status, 'the session opened before the reload').to.equal(404);
      // A key that is not the certificate's: refused when read, the running pair kept.
      writeFileSync(pair.key, readFileSync(makeCertificate(sandbox.dir, 'stray').key));
      running.child.kill('SIGHUP');
      await eventually(() =>
        readLog(sandbox, 'error.log').find((l) => l.includes('configuration not read again, the running one is kept')),
      );
      expect(readLog(sandbox, 'error.log').find((l) => l.includes('is not the key of the certificate'))).to.not.equal(undefined);
      expect(await presentedName(port)).to.equal('second');
      expect((await h2get(session, '/missing.txt')).status).to.equal(404);
    } finally {
      session.close();
    }
  });

  it('answers 408 to an HTTP/2 request whose body is still arriving at --request-timeout, and lets a long answer to a GET run', async function () {
    writeControllers(sandbox);
    // An answer that outlasts --request-timeout: the request had no body, so nothing is late.
    writeFileSync(
      join(sandbox.controllers, 'Drip.ts'),
      `export default () => new Response(new ReadableStream({ async start(c) { c.enqueue(new TextEncoder().encode('a'));\n` +
        `  await new Promise((r) => setTimeout(r, 1500)); c.enqueue(new TextEncoder().encode('b')); c.close(); } }));\n`,
    );
    const pair = makeCertificate(sandbox.dir);
    const limits = ['--header-timeout', '1', '--request-timeout', '1'];
    running = await startStack(sandbox, ['--tls-port', '0', '--tls-cert', pair.cert, '--tls-key', pair.key, ...limits]);
    const session = connect(running.tlsUrl!, { rejectUnauthorized: false });
    try {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/External/Upload',
        'content-length': '100',
        'user-agent': 'slow-body',
      });
      stream.on('error', () => {});
      stream.resume();
      const answer = once(stream, 'response') as Promise<[Record<string, string | number>]>;
      stream.write('a'); // and never the other 99 bytes
      const [headers] = await answer;
      expect(headers[':status']).to.equal(408);
      await once(stream, 'close');
      await eventually(() => readLog(sandbox, 'access.log').find((l) => l.includes('"POST /External/Upload HTTP/2.0" 408 ')));
      await eventually(() => readLog(sandbox, 'error.log').find((l) => l.includes('AH01382: Request body read timeout')));
      // The same session goes on: the late stream was reset, not the connection.
      expect(await h2get(session, '/External/Drip')).to.deep.equal({ status: 200, body: 'ab' });
      expect(readLog(sandbox, 'error.log').filter((l) => l.includes('AH01382'))).to.have.length(1);
    } finally {
      session.destroy();
    }
  });

  it('stops gracefully on HTTP/2: the stream in flight is answered, the session is told GOAWAY', async function () {
    const pair = makeCertificate(sandbox.dir);
    running = await startStack(sandbox, ['--tls-port', '0', '--tls-cert', pair.cert, '--tls-key', pair.key]);
    const session = connect(running.tlsUrl!, { rejectUnauthorized: false });
    session.on('error', () => {});
    const goaway = once(session, 'goaway');
    const called = slowController(sandbox, 'Marked', 1500);
    const slow = h2get(session, '/External/Marked');
    // The stop begins once the controller runs.
    await called.reached(10_000);
    const stopped = running.stop();
    expect(await slow).to.deep.equal({ status: 200, body: 'done slowly' });
    await goaway;
    expect(await stopped).to.equal(0);
    running = undefined;
    session.destroy();
  });
});
