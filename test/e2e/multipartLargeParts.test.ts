// Multipart parts of 16 KiB (a stream's default highWaterMark) and more, whose closing boundary arrives in the
// same chunk as their data. Dicer held that chunk's write callback until the part was read again, which a part
// that has ended never is: the host's request hung, and the proxy answered 504 after --upstream-timeout. Each
// body goes to one host worker on its own socket, by curl -F and by a raw socket writing the whole request at
// once, and through the proxy by curl -F (where the chunks depend on the forwarder); each must be answered at
// once, as php-cgi 8.2 answers the same body (docs/controllers.md, "Request input").
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { FORWARDERS } from '../../common/settings.ts';
import { curl } from '../helpers/clients.ts';
import { rawAnswerOnSocket } from '../helpers/http.ts';
import { askPhp, disposition, ECHO_CONTROLLER, MULTIPART, part, requirePhpCgi } from '../helpers/php.ts';
import { makeSandbox, startProcess, startProxy, type Running, type Sandbox } from '../helpers/stack.ts';

/** The host's defaults, which are php.ini's. */
const LIMITS = { postMaxSize: 8 * 1024 * 1024, uploadMaxFilesize: 2 * 1024 * 1024, maxFileUploads: 20 };
/** A hang fails the test here, long before the proxy's 504. */
const ANSWER_WITHIN_MS = 5000;
const UPSTREAM_TIMEOUT_S = 60;
const HIGH_WATER_MARK = 16 * 1024;

type Entry = { name: string; file: number } | { name: string; value: string };

/** ASCII without CR, LF or `-`, so that PHP reads the same bytes from a JS string and no boundary is mimicked. */
const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
const content = (size: number) =>
  ALPHABET.repeat(Math.ceil(size / ALPHABET.length) + 1).slice(size % ALPHABET.length, (size % ALPHABET.length) + size);
const fileName = (size: number) => `f-${size}.bin`;

const SIZES = [8_000, 16_000, HIGH_WATER_MARK - 1, HIGH_WATER_MARK, HIGH_WATER_MARK + 1, 17_000, 20_000, 30_000, 100_000, 1_000_000];

const CASES: { title: string; entries: Entry[] }[] = [
  ...SIZES.map((size) => ({ title: `one file of ${size} bytes`, entries: [{ name: 'f', file: size }] })),
  {
    // Within one 64 KiB read, so that every part and the closing boundary can arrive in one chunk.
    title: 'three files in one body (17,000, 8,000 and 20,000 bytes)',
    entries: [
      { name: 'a', file: 17_000 },
      { name: 'b', file: 8_000 },
      { name: 'c', file: 20_000 },
    ],
  },
  {
    title: 'a text field after a file of 20,000 bytes',
    entries: [
      { name: 'f', file: 20_000 },
      { name: 'after', value: 'a' },
    ],
  },
  {
    title: 'a text field between two files of 100,000 and 30,000 bytes',
    entries: [
      { name: 'f', file: 100_000 },
      { name: 'between', value: 'b' },
      { name: 'g', file: 30_000 },
    ],
  },
  { title: 'a text field of 20,000 characters and no file', entries: [{ name: 'text', value: content(20_000) }] },
];

/** The body as the raw client sends it and PHP reads it: boundary XX, each file typed as curl -F types it below. */
function multipartBody(entries: Entry[]): string {
  const parts = entries.map((entry) =>
    'file' in entry
      ? part(`${disposition(entry.name, fileName(entry.file))}\r\nContent-Type: application/octet-stream`, content(entry.file))
      : part(disposition(entry.name), entry.value),
  );
  return `${parts.join('')}--XX--\r\n`;
}

/** The status and JSON body of a raw answer (the host gives a Content-Length and closes on Connection: close). */
function parseRawAnswer(answer: string): { status: number; json: unknown } {
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
  return { status, json: JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) };
}

describe('multipart parts of 16 KiB and more, their closing boundary in the same chunk', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;
  let files: string;
  let socket: string;
  let host: Running;
  const proxies = new Map<string, { sandbox: Sandbox; proxy: Running }>();

  before(async function () {
    requirePhpCgi();
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.controllers, 'Echo.ts'), ECHO_CONTROLLER);
    files = join(sandbox.dir, 'files');
    mkdirSync(files);
    for (const size of new Set(CASES.flatMap(({ entries }) => entries.flatMap((e) => ('file' in e ? [e.file] : []))))) {
      writeFileSync(join(files, fileName(size)), content(size));
    }
    socket = join(sandbox.dir, 'host.sock');
    host = await startHost();
    for (const forwarder of FORWARDERS) {
      const proxySandbox = makeSandbox();
      const proxy = await startProxy(proxySandbox, [
        '--upstream',
        `unix:${socket}`,
        '--forwarder',
        forwarder,
        '--proxy-workers',
        '1',
        '--upstream-timeout',
        String(UPSTREAM_TIMEOUT_S),
      ]);
      proxies.set(forwarder, { sandbox: proxySandbox, proxy });
    }
  });

  /**
   * One worker, as in the report; the proxies reach it on the same socket path across a restart. A stop waits
   * 1 s for a hung request, not the default 35.
   */
  const startHost = () =>
    startProcess('host', ['--www', sandbox.www, '--logs', sandbox.logs, '--socket', socket, '--workers', '1', '--shutdown-timeout', '1']);

  // A hung request holds the one worker for good (its client leaving after the whole body does not end it):
  // a new host, so that each case fails on its own and not every case after the first hang.
  afterEach(async function () {
    if (this.currentTest?.state !== 'failed') return;
    await host.stop();
    host = await startHost();
  });

  after(async function () {
    for (const { proxy } of proxies.values()) await proxy.stop();
    await host?.stop();
    for (const { sandbox: proxySandbox } of proxies.values()) proxySandbox.remove();
    sandbox?.remove();
  });

  /** curl's -F arguments for the entries: files by path, typed as the raw body types them; text as given. */
  const formArgs = (entries: Entry[]) =>
    entries.flatMap((entry) =>
      'file' in entry
        ? ['-F', `${entry.name}=@${join(files, fileName(entry.file))};type=application/octet-stream`]
        : ['--form-string', `${entry.name}=${entry.value}`],
    );

  async function curlForm(url: string, entries: Entry[], extra: string[] = []): Promise<unknown> {
    const reply = await curl(url, ['--max-time', String(ANSWER_WITHIN_MS / 1000), ...extra, ...formArgs(entries)]);
    expect(reply.status, reply.body.toString('utf8').slice(0, 300)).to.equal(200);
    return JSON.parse(reply.body.toString('utf8'));
  }

  for (const { title, entries } of CASES) {
    describe(title, function () {
      let body: string;
      let expected: unknown;

      before(function () {
        body = multipartBody(entries);
        expected = askPhp({ contentType: MULTIPART, body }, LIMITS);
      });

      it("is answered at once, as PHP answers it, to curl -F on the host's socket", async function () {
        expect(await curlForm('http://host/External/Echo', entries, ['--unix-socket', socket])).to.deep.equal(expected);
      });

      it("is answered at once, as PHP answers it, to a raw socket writing the whole request in one write to the host's socket", async function () {
        const request = Buffer.from(
          `POST /External/Echo HTTP/1.1\r\nHost: host\r\nContent-Type: ${MULTIPART}\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
        const answer = parseRawAnswer(await rawAnswerOnSocket(socket, request, ANSWER_WITHIN_MS));
        expect(answer).to.deep.equal({ status: 200, json: expected });
      });

      for (const forwarder of FORWARDERS) {
        it(`is answered at once, as PHP answers it, to curl -F through the proxy (--forwarder ${forwarder})`, async function () {
          const { proxy } = proxies.get(forwarder)!;
          expect(await curlForm(`${proxy.url}/External/Echo`, entries)).to.deep.equal(expected);
        });
      }
    });
  }

  // RFC 2046 §5.1.1: an epilogue after the closing boundary is ignored. Here it follows the chunk whose write
  // Dicer held, so it must not be queued behind that write.
  it("answers a file of 20,000 bytes followed by a 1 MB epilogue, written in one write to the host's socket, as PHP answers it", async function () {
    const body = multipartBody([{ name: 'f', file: 20_000 }]) + 'e'.repeat(1024 * 1024);
    const request = Buffer.from(
      `POST /External/Echo HTTP/1.1\r\nHost: host\r\nContent-Type: ${MULTIPART}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    const expected = askPhp({ contentType: MULTIPART, body }, LIMITS);
    expect(parseRawAnswer(await rawAnswerOnSocket(socket, request, ANSWER_WITHIN_MS))).to.deep.equal({ status: 200, json: expected });
  });

  // Only a multipart body goes through Dicer; these are read by plain 'data' listeners (a urlencoded form) or
  // handed to the controller unread (php://input), and must not stall either.
  describe('bodies that are not multipart', function () {
    const BODIES = [
      { title: 'a urlencoded form of 100,000 bytes', contentType: 'application/x-www-form-urlencoded', body: `a=${content(100_000)}&b=2` },
      {
        title: 'an octet-stream body of 1,000,000 bytes, read by php://input',
        contentType: 'application/octet-stream',
        body: content(1_000_000),
      },
    ];
    for (const { title, contentType, body } of BODIES) {
      it(`answers ${title} at once, as PHP answers it, to curl and to a raw socket writing it in one write`, async function () {
        const expected = askPhp({ contentType, body }, LIMITS);
        const bodyFile = join(sandbox.dir, 'plain-body');
        writeFileSync(bodyFile, body);
        const reply = await curl('http://host/External/Echo', [
          '--unix-socket',
          socket,
          '--max-time',
          String(ANSWER_WITHIN_MS / 1000),
          '-H',
          `Content-Type: ${contentType}`,
          '--data-binary',
          `@${bodyFile}`,
        ]);
        expect(reply.status).to.equal(200);
        expect(JSON.parse(reply.body.toString('utf8'))).to.deep.equal(expected);
        const request = Buffer.from(
          `POST /External/Echo HTTP/1.1\r\nHost: host\r\nContent-Type: ${contentType}\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
        expect(parseRawAnswer(await rawAnswerOnSocket(socket, request, ANSWER_WITHIN_MS))).to.deep.equal({ status: 200, json: expected });
      });
    }
  });
});
