// The bench's logging floor (bench/nodeFloor.ts given a logs directory) stands in `npm run bench` for what the
// legacy's answers and lines cost any front: its figure means that only while it answers and logs the observed
// paths as extqs does. Both run here in front of one host, and their answers and lines are compared.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { get, type Reply } from '../helpers/http.ts';
import { eventually, makeSandbox, spawnReady, startProcess, startProxy, type Running, type Sandbox } from '../helpers/stack.ts';

/** A line with what differs between two processes and two requests (times, pids, client ports, ids) masked. */
function masked(line: string): string {
  return line
    .replace(/^\[[^\]]+\]/, '[time]')
    .replace(/\[\d\d\/\w+\/\d{4}:[\d:]+ [+-]\d{4}\]/, '[time]')
    .replace(/\[pid \d+\]/, '[pid]')
    .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:port')
    .replace(/request_id: [\w-]+/, 'request_id: id');
}

function linesOf(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).map(masked);
  } catch {
    return [];
  }
}

/** What a client sees of an answer, the fields that differ per request left out. */
function seen(reply: Reply) {
  const { status, body } = reply;
  const fields = ['server', 'content-type', 'content-length', 'etag', 'last-modified', 'accept-ranges', 'cache-control'];
  return {
    status,
    body,
    fields: Object.fromEntries(fields.map((name) => [name, reply.headers[name]])),
    id: typeof reply.headers['x-request-id'],
  };
}

describe("the bench's logging floor", function () {
  let sandbox: Sandbox;
  const running: Running[] = [];
  let floorLogs: string;
  let proxyUrl: string;
  let floorUrl: string;

  before(async function () {
    this.timeout(60_000);
    sandbox = makeSandbox();
    writeFileSync(join(sandbox.publicDir, 'index.html'), '<!DOCTYPE html>\n<p>External Query Service static page.</p>\n');
    const socket = join(sandbox.dir, 'host.sock');
    running.push(
      await startProcess('host', ['--www', sandbox.www, '--logs', join(sandbox.dir, 'host-logs'), '--socket', socket, '--workers', '1']),
    );
    const proxy = await startProxy(sandbox, ['--upstream', `unix:${socket}`, '--proxy-workers', '1']);
    running.push(proxy);
    floorLogs = join(sandbox.dir, 'floor-logs');
    mkdirSync(floorLogs);
    const floor = await spawnReady(['--import', 'tsx', 'bench/nodeFloor.ts', socket, sandbox.publicDir, floorLogs]);
    running.push(floor);
    proxyUrl = proxy.url;
    floorUrl = floor.url;
  });

  after(async () => {
    for (const child of running.reverse()) await child.stop();
    sandbox?.remove();
  });

  it('answers the observed paths and a file, fresh and revalidated, as extqs does, and writes the same lines', async function () {
    this.timeout(30_000);
    const { etag } = (await get(proxyUrl, '/index.html')).headers;
    const asked: [string, Record<string, string>][] = [
      ['/External/Latest?sn=123&no=1', {}],
      ['/External/Alarm?all_alarm&all', {}],
      ['/favicon.ico', {}],
      ['/index.html', {}],
      ['/index.html', { 'If-None-Match': String(etag) }],
    ];
    const answersOf = async (url: string) => {
      const answers = [];
      for (const [path, headers] of asked)
        answers.push(seen(await get(url, path, { headers: { 'User-Agent': 'curl/7.88.1', ...headers } })));
      return answers;
    };
    const extqsAnswers = await answersOf(proxyUrl);
    const floorAnswers = await answersOf(floorUrl);
    expect(floorAnswers).to.deep.equal(extqsAnswers);
    expect(extqsAnswers.map((answer) => answer.status)).to.deep.equal([500, 500, 404, 200, 304]);

    /** `file`'s lines that `keep` keeps, once there are `count` of them. */
    const linesOnce = (file: string, count: number, keep: (line: string) => boolean, what: string) =>
      eventually(
        () => {
          const lines = linesOf(file).filter(keep);
          return lines.length === count ? lines : undefined;
        },
        5_000,
        what,
      );
    const every = () => true;
    // The proxy's first GET of the file (for its ETag) is in its access log only.
    const extqsAccess = await linesOnce(join(sandbox.logs, 'access.log'), asked.length + 1, every, "extqs's access lines");
    const floorAccess = await linesOnce(join(floorLogs, 'access.log'), asked.length, every, "the floor's access lines");
    expect(floorAccess).to.deep.equal(extqsAccess.slice(1));

    const ofRequest = (line: string) => line.includes('request_id:');
    const extqsErrors = await linesOnce(join(sandbox.logs, 'error.log'), 5, ofRequest, "extqs's error lines");
    const floorErrors = await linesOnce(join(floorLogs, 'error.log'), 5, ofRequest, "the floor's error lines");
    expect(floorErrors).to.deep.equal(extqsErrors);
  });
});
