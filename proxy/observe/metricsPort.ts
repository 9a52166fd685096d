// --metrics-port: a listener of its own that serves /metrics alone, to any client, so that a cluster's Prometheus
// can scrape a pod without /server-status (client addresses and URLs) being opened to every pod as well. Scrapes
// write no access line: one every 15 s from each scraper would drown the requests served.
import { createServer, type Server } from 'node:http';
import { sendScrape, type Scrape } from './metrics.ts';

export function metricsPortServer(scrape: () => Promise<Scrape>, logError: (message: string) => void): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('only /metrics is served on this port\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end(`${req.method} is not allowed\n`);
      return;
    }
    scrape().then(
      (answer) => sendScrape(req, res, answer),
      (err: Error) => {
        logError(`/metrics on --metrics-port failed: ${err.message}`);
        if (!res.headersSent)
          res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('the figures could not be gathered\n');
      },
    );
  });
}
