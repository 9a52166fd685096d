// The pool's primary answers a controller with no file itself (host/controller/missingController.ts): its answer and
// its host.log event must be a worker's, byte for byte. Both are run here on unix sockets and sent the same
// raw requests.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import { createHostApp } from '../../host/worker/app.ts';
import type { HostLog } from '../../host/wire/hostLog.ts';
import { answerMissingController } from '../../host/controller/missingController.ts';
import { ControllerRegistry } from '../../host/controller/registry.ts';
import { RunningCalls } from '../../host/worker/runningCalls.ts';
import { WorkerStats } from '../../host/wire/stats.ts';

interface Event {
  level: string;
  message: string;
  requestId: string | undefined;
}

function recordingLog(events: Event[]): HostLog {
  const at = (level: string) => (message: string, requestId?: string) => void events.push({ level, message, requestId });
  return { error: at('error'), warn: at('warn'), notice: at('notice'), info: at('info'), debug: at('debug'), drain: async () => {} };
}

/** The whole answer to one raw request on a fresh connection, its Date blanked. */
function answer(socketPath: string, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath, () => socket.write(request));
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\r\n\r\n')) socket.end();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(text.replace(/\r\nDate: [^\r]+/, '\r\nDate: -')));
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("the primary's answer for a controller with no file", () => {
  let dir: string;
  let controllers: string;
  let app: FastifyInstance;
  let primary: Server;
  const workerEvents: Event[] = [];
  const primaryEvents: Event[] = [];
  let counted = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'extqs-missing-'));
    controllers = join(dir, 'controllers');
    mkdirSync(controllers);
    writeFileSync(join(controllers, 'Here.ts'), `export default () => 'here';\n`);
    const registry = new ControllerRegistry(
      controllers,
      { loaded: () => {}, removed: () => {}, reloadFailed: () => {}, disposeFailed: () => {} },
      'owner',
    );
    app = createHostApp({
      registry,
      log: recordingLog(workerEvents),
      stats: new WorkerStats(),
      limit: undefined,
      inputLimits: { postMaxSize: 1 << 20, uploadMaxFilesize: 1 << 20, maxFileUploads: 20 },
      poolStatus: () => Promise.reject(new Error('no pool here')),
      onRequestEnd: () => {},
      running: new RunningCalls(),
      outputBuffering: 4096,
    });
    await app.listen({ path: join(dir, 'worker.sock') });
    // As the pool's server: keep-alive as long as a worker's (host/pool/poolServer.ts), anything else refused 418.
    const answerIt = answerMissingController(controllers, recordingLog(primaryEvents), () => (counted += 1));
    primary = createServer({ keepAliveTimeout: 75_000, requireHostHeader: false }, (req, res) => {
      if (!answerIt(req, res)) res.writeHead(418).end();
    });
    await new Promise<void>((resolve) => primary.listen(join(dir, 'primary.sock'), resolve));
  });

  after(async () => {
    await app.close();
    primary.closeAllConnections();
    await new Promise((resolve) => primary.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const requests = [
    'GET /External/Latest?sn=123&no= HTTP/1.1\r\nHost: h\r\nX-Request-Id: abc-123\r\n\r\n',
    'HEAD /External/Latest HTTP/1.1\r\nHost: h\r\nX-Request-Id: abc-124\r\n\r\n',
    'POST /External/Latest/a%20b/c HTTP/1.1\r\nHost: h\r\nX-Request-Id: abc-125\r\nContent-Length: 3\r\n\r\nabc',
    'DELETE /External/La%74est?x=%zz HTTP/1.1\r\nHost: h\r\nX-Request-Id: abc-126\r\n\r\n',
    'GET /External/_Only_9 HTTP/1.0\r\nX-Request-Id: abc-127\r\n\r\n',
  ];

  for (const request of requests) {
    it(`answers and logs ${request.split('\r\n', 1)[0]} as a worker does`, async () => {
      const fromWorker = await answer(join(dir, 'worker.sock'), request);
      const fromPrimary = await answer(join(dir, 'primary.sock'), request);
      expect(fromWorker).to.match(/^HTTP\/1\.[01] 500 /);
      expect(fromPrimary).to.equal(fromWorker);
      expect(primaryEvents.at(-1)).to.deep.equal(workerEvents.at(-1));
    });
  }

  it('makes a request id when the proxy sent none, as a worker does', async () => {
    await answer(join(dir, 'primary.sock'), 'GET /External/Latest HTTP/1.1\r\nHost: h\r\nX-Request-Id: not well formed\r\n\r\n');
    expect(primaryEvents.at(-1)?.requestId).to.match(UUID);
  });

  it('leaves to a worker a controller that has a file, and a name that is not an identifier', async () => {
    const before = counted;
    for (const path of ['/External/Here', '/External/no-such', '/External/%zz', '/Other/Latest'])
      expect(await answer(join(dir, 'primary.sock'), `GET ${path} HTTP/1.1\r\nHost: h\r\n\r\n`)).to.match(/^HTTP\/1\.1 418 /);
    expect(counted).to.equal(before);
  });
});
