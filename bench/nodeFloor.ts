// The least a Node.js front can do on the bench's paths, as a yardstick for extqs in the same run:
// node:http and an undici Pool forwarding /External/ to the host, www/public's files from memory, a
// bare 404 otherwise; no logs, no request ids, no limits. `nodeFloor.ts <host socket> <public dir>`
// prints a ready line like extqs's.
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Pool, type Dispatcher } from 'undici';
import { readyLine } from '../common/ready.ts';

const [socketPath, publicDir] = process.argv.slice(2);
const files = new Map(readdirSync(publicDir).map((name) => [`/${name}`, readFileSync(join(publicDir, name))]));
const notFound = Buffer.from(
  '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head><title>404 Not Found</title></head></html>\n',
);
const pool = new Pool('http://localhost', { socketPath, connections: 64 });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

function relay(res: ServerResponse): Dispatcher.DispatchHandler {
  return {
    onConnect: () => {},
    onError: (err) => {
      process.stderr.write(`${err.message}\n`);
      if (!res.headersSent) res.statusCode = 502;
      res.end();
    },
    onHeaders: (status, rawHeaders) => {
      res.statusCode = status;
      for (let i = 0; i < rawHeaders.length; i += 2) {
        const name = rawHeaders[i].toString('latin1');
        if (!HOP_BY_HOP.has(name.toLowerCase())) res.setHeader(name, rawHeaders[i + 1].toString('latin1'));
      }
      return true;
    },
    // The bench's bodies are small: never pausing the upstream keeps this handler minimal.
    onData: (chunk) => {
      res.write(chunk);
      return true;
    },
    onComplete: () => res.end(),
  };
}

const server = createServer((req, res) => {
  const url = req.url ?? '/';
  if (url.startsWith('/External/')) {
    pool.dispatch({ path: url, method: 'GET', headers: { host: 'localhost' } }, relay(res));
    return;
  }
  const file = files.get(url);
  res.writeHead(file ? 200 : 404, { 'Content-Type': 'text/html', 'Content-Length': (file ?? notFound).length });
  res.end(file ?? notFound);
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${readyLine(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
