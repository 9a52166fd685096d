// Multipart bodies of every shape, each sent again and again to one host worker. A parse that waits for
// an end the parser has already declared hangs or not depending on how the body's last bytes arrive, so
// some shapes hang only from a worker's second multipart body, and a hang shows only as the proxy's 504
// after --upstream-timeout. Each request here must be answered well within that, and as php-cgi 8.2
// answers the same body (docs/controllers.md, "Request input").
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { FORWARDERS } from '../../common/settings.ts';
import { curl } from '../helpers/clients.ts';
import { get, type Reply } from '../helpers/http.ts';
import { askPhp, disposition, ECHO_CONTROLLER, MULTIPART, part, requirePhpCgi } from '../helpers/php.ts';
import { eventually, makeSandbox, readHostEvents, readLog, startStack, type Running, type Sandbox } from '../helpers/stack.ts';

/** php.ini's defaults but for the file limits: a 3 MB file passes upload_max_filesize, a fourth file max_file_uploads. */
const LIMITS = { postMaxSize: 8 * 1024 * 1024, uploadMaxFilesize: 1024 * 1024, maxFileUploads: 3 };
const SENDS = 6;
/** A hang fails the test here, long before the proxy's 504. */
const UPSTREAM_TIMEOUT_S = 60;
const ANSWER_WITHIN_MS = 5000;

const fields = (count: number) => Array.from({ length: count }, (_, i) => part(disposition(`f${i}`), String(i))).join('');
const fieldsAndFiles = (count: number) =>
  Array.from({ length: count }, (_, i) =>
    i % 2 === 0 ? part(disposition(`f${i}`), String(i)) : part(disposition(`up${i}`, `${i}.txt`), `file ${i}`),
  ).join('');
const TWO_FIELDS = part(disposition('a'), '1') + part(disposition('b'), '2') + '--XX--\r\n';

interface Shape {
  title: string;
  body: string;
  /** What must hold besides PHP's answer, said outright. */
  check: (answer: { post: Record<string, unknown>; files: Record<string, unknown> }) => void;
}

const SHAPES: Shape[] = [
  {
    title: 'a form of two text fields and no file',
    body: TWO_FIELDS,
    check: ({ post, files }) => expect({ post, files }).to.deep.equal({ post: { a: '1', b: '2' }, files: {} }),
  },
  {
    // RFC 2046 §5.1.1: what follows the closing delimiter is an epilogue, ignored; here it is still arriving
    // when the parser has seen the form's end.
    title: 'a form of two text fields with a 1 MB epilogue after its closing boundary',
    body: TWO_FIELDS + 'e'.repeat(1024 * 1024),
    check: ({ post, files }) => expect({ post, files }).to.deep.equal({ post: { a: '1', b: '2' }, files: {} }),
  },
  {
    title: 'a form of 10,000 text fields and no file (past max_input_vars and the parts limit)',
    body: fields(10_000) + '--XX--\r\n',
    check: ({ post }) => expect(Object.keys(post)).to.have.length(1000),
  },
  {
    title: 'a 3 MB file past upload_max_filesize between two fields',
    body:
      part(disposition('before'), 'b') +
      part(disposition('big', 'big.bin'), 'x'.repeat(3 * 1024 * 1024)) +
      part(disposition('after'), 'a') +
      '--XX--\r\n',
    // PHP's UPLOAD_ERR_INI_SIZE, no file kept, and the field after it still read.
    check: ({ post, files }) => {
      expect(files.big).to.deep.equal({ name: 'big.bin', fullPath: 'big.bin', type: '', tmpName: '', error: 1, size: 0 });
      expect(post).to.deep.equal({ before: 'b', after: 'a' });
    },
  },
  {
    title: '10,000 parts, text fields and files in turn (past max_file_uploads and the parts limit)',
    body: fieldsAndFiles(10_000) + '--XX--\r\n',
    check: ({ files }) => expect(Object.keys(files)).to.deep.equal(['up1', 'up3', 'up5']),
  },
];

/** `request`, its failure naming which of the sends it was (some shapes hang only from the second on). */
function send<T>(index: number, request: Promise<T>): Promise<T> {
  return request.catch((err: Error) => {
    throw new Error(`send ${index} of ${SENDS}: ${err.message}`, { cause: err });
  });
}

/** Every multipart upload directory the host has in TMPDIR (docs/controllers.md, "Request input": one per request). */
function uploadDirs(tmp: string): string[] {
  return readdirSync(tmp).filter((name) => name.startsWith('extqs-upload-'));
}

for (const forwarder of FORWARDERS) {
  describe(`multipart bodies sent ${SENDS} times in a row to one host worker (--forwarder ${forwarder})`, function () {
    this.timeout(90_000);
    let sandbox: Sandbox;
    let stack: Running;
    let tmp: string;

    before(async function () {
      requirePhpCgi();
      sandbox = makeSandbox();
      // The host's own TMPDIR, so a test sees its uploads come and go and nobody else's.
      tmp = join(sandbox.dir, 'tmp');
      mkdirSync(tmp);
      writeFileSync(join(sandbox.controllers, 'Echo.ts'), ECHO_CONTROLLER);
      writeFileSync(
        join(sandbox.controllers, 'Record.ts'),
        `import { appendFileSync } from 'node:fs';
export default ({ rawQuery, post, files }: any) => {
  appendFileSync(${JSON.stringify(join(sandbox.dir, 'records'))}, JSON.stringify({ query: rawQuery, post, files }) + '\\n');
  return 'recorded';
};
`,
      );
      stack = await startStack(
        sandbox,
        [
          '--workers',
          '1',
          '--forwarder',
          forwarder,
          '--upstream-timeout',
          String(UPSTREAM_TIMEOUT_S),
          '--post-max-size',
          String(LIMITS.postMaxSize),
          '--upload-max-filesize',
          String(LIMITS.uploadMaxFilesize),
          '--max-file-uploads',
          String(LIMITS.maxFileUploads),
        ],
        { TMPDIR: tmp },
      );
    });

    after(async function () {
      await stack?.stop();
      sandbox?.remove();
    });

    /** What controller Record was called with, one line per call. */
    function records(): { query: string }[] {
      const file = join(sandbox.dir, 'records');
      if (!existsSync(file)) return [];
      return readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { query: string });
    }

    /** The one worker served every request: none died and was replaced. */
    function expectNoWorkerReplaced(): void {
      expect(readHostEvents(sandbox).filter((line) => / exited with /.test(line))).to.deep.equal([]);
    }

    const clients: [string, (body: string, bodyFile: string) => Promise<Reply>][] = [
      [
        'curl, which sends Expect: 100-continue and the body after the proxy answers 100',
        async (_body, bodyFile) => {
          const reply = await curl(`${stack.url}/External/Echo`, [
            '--max-time',
            String(ANSWER_WITHIN_MS / 1000),
            '-H',
            `Content-Type: ${MULTIPART}`,
            '-H',
            'Expect: 100-continue',
            '--data-binary',
            `@${bodyFile}`,
          ]);
          return { status: reply.status, headers: reply.headers, body: reply.body.toString('utf8') };
        },
      ],
      [
        'node:http, which sends the whole body with its headers',
        (body) =>
          get(stack.url, '/External/Echo', { method: 'POST', headers: { 'Content-Type': MULTIPART }, body, timeoutMs: ANSWER_WITHIN_MS }),
      ],
    ];

    SHAPES.forEach((shape, index) => {
      describe(shape.title, function () {
        let expected: unknown;
        let bodyFile: string;

        before(function () {
          expected = askPhp({ contentType: MULTIPART, body: shape.body }, LIMITS);
          bodyFile = join(sandbox.dir, `body-${index}`);
          writeFileSync(bodyFile, shape.body);
        });

        for (const [client, request] of clients) {
          it(`is answered at once each time, as PHP answers it, and leaves no upload behind (${client})`, async function () {
            for (let i = 1; i <= SENDS; i++) {
              const reply = await send(i, request(shape.body, bodyFile));
              expect(reply.status, `send ${i}: ${reply.body.slice(0, 300)}`).to.equal(200);
              const answer = JSON.parse(reply.body) as Parameters<Shape['check']>[0];
              shape.check(answer);
              expect(answer, `send ${i}`).to.deep.equal(expected);
            }
            await eventually(() => (uploadDirs(tmp).length === 0 ? true : undefined), 3000, 'every upload directory removed');
            expectNoWorkerReplaced();
          });
        }
      });
    });

    it(`answers \`curl -F a=1 -F b=2\` at once each time (curl's own boundary, no Expect)`, async function () {
      for (let i = 1; i <= SENDS; i++) {
        const reply = await send(
          i,
          curl(`${stack.url}/External/Echo`, ['--max-time', String(ANSWER_WITHIN_MS / 1000), '-F', 'a=1', '-F', 'b=2']),
        );
        expect(reply.status, `send ${i}`).to.equal(200);
        expect(JSON.parse(reply.body.toString('utf8'))).to.deep.equal({ post: { a: '1', b: '2' }, files: {}, cookies: {}, input: '' });
      }
    });

    it("relays PHP's start-up warnings to error.log as mod_fcgid's stderr lines, as the legacy's error.log has them", async function () {
      const files = Array.from({ length: LIMITS.maxFileUploads + 1 }, (_, i) => ['-F', `f${i}=@${join(sandbox.dir, `upload-${i}.txt`)}`]);
      for (let i = 0; i <= LIMITS.maxFileUploads; i++) writeFileSync(join(sandbox.dir, `upload-${i}.txt`), `file ${i}\n`);
      const cases = [
        ['too many files', files.flat(), 'PHP Warning:  Maximum number of allowable file uploads has been exceeded in Unknown on line 0'],
        [
          'a multipart body without a boundary',
          ['-H', 'Content-Type: multipart/form-data', '--data-binary', 'a=1'],
          'PHP Warning:  Missing boundary in multipart/form-data POST data in Unknown on line 0',
        ],
      ] as const;
      for (const [what, args, warning] of cases) {
        const id = `warned-${what.replace(/\W+/g, '-')}-${forwarder}`;
        const reply = await curl(`${stack.url}/External/Echo`, ['-H', `X-Request-Id: ${id}`, ...args]);
        expect(reply.status, what).to.equal(200);
        expect(reply.headers, what).not.to.have.property('x-extqs-stderr');
        const line = await eventually(
          () => readLog(sandbox, 'error.log').find((l) => l.endsWith(`request_id: ${id}`)),
          3000,
          `the error.log line of ${what}`,
        );
        expect(line).to.match(/\[fcgid:warn\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] mod_fcgid: stderr: /);
        expect(line).to.contain(`mod_fcgid: stderr: ${warning} in POST /External/Echo, request_id: ${id}`);
      }
    });

    describe('when the client leaves in the middle of a file', function () {
      /**
       * Sends a field and the start of a file (of a body declared longer), waits until the host is writing
       * the file, and closes the connection. With `expectContinue` the headers go first and the body
       * after the proxy's 100 Continue.
       */
      async function leaveMidFile(query: string, expectContinue: boolean): Promise<void> {
        const head = part(disposition('first'), 'kept') + `--XX\r\n${disposition('cut', 'cut.bin')}\r\n\r\n`;
        const declared = head.length + 1_000_000 + '\r\n--XX--\r\n'.length;
        const { hostname, port } = new URL(stack.url);
        const socket = connect(Number(port), hostname);
        let received = '';
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => (received += chunk));
        socket.on('error', () => {}); // the reset it causes itself
        socket.write(
          `POST /External/Record?${query} HTTP/1.1\r\nHost: x\r\nContent-Type: ${MULTIPART}\r\nContent-Length: ${declared}\r\n` +
            (expectContinue ? 'Expect: 100-continue\r\n\r\n' : '\r\n'),
        );
        if (expectContinue) await eventually(() => (received.startsWith('HTTP/1.1 100 ') ? true : undefined), 3000, 'the 100 Continue');
        socket.write(head + 'y'.repeat(256 * 1024));
        await eventually(
          () =>
            uploadDirs(tmp).some((dir) => readdirSync(join(tmp, dir)).some((file) => statSync(join(tmp, dir, file)).size > 0))
              ? true
              : undefined,
          ANSWER_WITHIN_MS,
          'the host writing the upload',
        );
        socket.destroy();
      }

      it(`keeps the field, reports the file UPLOAD_ERR_PARTIAL, removes it and serves the next form, ${SENDS} times`, async function () {
        for (let i = 1; i <= SENDS; i++) {
          const query = `cut=${i}`;
          const expectContinue = i % 2 === 0;
          await leaveMidFile(query, expectContinue);
          const record = await eventually(
            () => records().find((r) => r.query === query),
            ANSWER_WITHIN_MS,
            `the controller called for ${query} (Expect: ${expectContinue})`,
          );
          expect(record).to.deep.equal({
            query,
            post: { first: 'kept' },
            files: { cut: { name: 'cut.bin', fullPath: 'cut.bin', type: '', tmpName: '', error: 3, size: 0 } },
          });
          await eventually(() => (uploadDirs(tmp).length === 0 ? true : undefined), 3000, 'the upload directory removed');
          const next = await send(
            i,
            get(stack.url, '/External/Echo', {
              method: 'POST',
              headers: { 'Content-Type': MULTIPART },
              body: TWO_FIELDS,
              timeoutMs: ANSWER_WITHIN_MS,
            }),
          );
          expect(next.status, `the form after ${query}`).to.equal(200);
          expect(JSON.parse(next.body)).to.deep.include({ post: { a: '1', b: '2' }, files: {} });
        }
        // Logged as clients that left (F5, 400), not as bodies the parser refused (F1); the host logs nothing.
        const cuts = await eventually(
          () => {
            const lines = readLog(sandbox, 'access.log').filter((line) => line.includes('"POST /External/Record?cut='));
            return lines.length === SENDS ? lines : undefined;
          },
          ANSWER_WITHIN_MS,
          'an access line for each cut',
        );
        for (const line of cuts) expect(line).to.match(/" 400 - /);
        const errors = readLog(sandbox, 'error.log');
        expect(
          errors.filter((line) => /\[core:info\] .*Request body incomplete: the connection closed before it ended/.test(line)),
        ).to.have.length(SENDS);
        expect(errors.filter((line) => line.includes('Bad request'))).to.deep.equal([]);
        expect(readLog(sandbox, 'host.log').filter((line) => line.includes('Refused a request'))).to.deep.equal([]);
        expectNoWorkerReplaced();
      });
    });
  });
}
