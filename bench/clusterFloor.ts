// The least a Node.js host does for a controller, as the host half of the Node stack floor: a `node:cluster`
// primary and one plain `node:http` worker per CPU sharing one unix socket (cluster's default scheduling),
// each answering the stack scenarios' JSON, at once for `/External/Echo` and after 200 ms for
// `/External/Wait`; no logs, no request ids, no reloads. Anything else: 404.
// `clusterFloor.ts <socket>` prints a ready line like extqs's once every worker listens.
import cluster from 'node:cluster';
import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { readyLine } from '../common/ready.ts';
import { AWAIT_MS, stackAnswer } from './stackScenarios.ts';

const [socketPath] = process.argv.slice(2);

function answer(req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify(stackAnswer(new URL(req.url ?? '/', 'http://host').searchParams));
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function serve(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?', 1)[0];
  if (path === '/External/Echo') return answer(req, res);
  if (path === '/External/Wait') {
    void sleep(AWAIT_MS).then(() => answer(req, res));
    return;
  }
  res.writeHead(404, { 'content-length': 0 }).end();
}

if (cluster.isPrimary) {
  rmSync(socketPath, { force: true });
  const workers = availableParallelism();
  let listening = 0;
  cluster.on('listening', () => {
    if (++listening === workers) process.stdout.write(`${readyLine(`unix:${socketPath}`)}\n`);
  });
  for (let i = 0; i < workers; i++) cluster.fork();
  // A bare primary leaves its workers running when it is killed: it stops them, and goes once they are gone.
  process.on('SIGTERM', () => {
    let running = workers;
    cluster.on('exit', () => --running === 0 && process.exit(0));
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  });
} else {
  const server = createServer({ keepAliveTimeout: 75_000 }, serve);
  server.listen(socketPath);
  process.on('SIGTERM', () => process.exit(0));
}
