// /metrics: the proxy's and its hosts' figures in Prometheus's text format, for clients on --status-allow
// (and on --metrics-port: metricsPort.ts). Every proxy process's share (processShare.ts) and each host's
// /status (hostMetrics.ts), summed as /server-status sums them (proxyFigures.ts).
import type { ServerResponse } from 'node:http';
import type { BlockList } from 'node:net';
import { hostMetricsJson } from './hostMetrics.ts';
import type { MetricJson } from '../core/metricJson.ts';
import type { RequestContext } from '../core/requestContext.ts';
import { sumShares } from './proxyFigures.ts';
import { hostStatus, refused } from './serverStatus.ts';
import type { StatusReport } from './statusPage.ts';
import type { Upstreams, UpstreamState } from '../forward/upstreams.ts';

/** A host's /status under its upstream's label, not its name: series that outlive a restart's new socket directory. */
async function labelledHostStatus(upstream: UpstreamState): Promise<StatusReport['hosts'][number]> {
  return { ...(await hostStatus(upstream)), upstream: upstream.label };
}

export interface MetricsEndpointOptions {
  /** This process's share, or every proxy worker's (--proxy-workers): the answer sums them (proxyFigures.ts). */
  processes: () => Promise<MetricJson[][]>;
  upstreams: Upstreams;
  allow: BlockList;
}

/** A scrape: the figures of every proxy process and host, as Prometheus's text. */
export interface Scrape {
  contentType: string;
  body: string;
}

/** Every process's share and every host's status, summed into one scrape (the public port's /metrics and --metrics-port's). */
export async function scrapeMetrics({ processes, upstreams }: Omit<MetricsEndpointOptions, 'allow'>): Promise<Scrape> {
  const [shares, hosts] = await Promise.all([processes(), Promise.all(upstreams.all.map(labelledHostStatus))]);
  const registry = await sumShares([...shares, await hostMetricsJson(hosts)]);
  return { contentType: registry.contentType, body: await registry.metrics() };
}

/** Writes a scrape as the answer to GET or HEAD, unless the client left while the workers and hosts were asked. */
export function sendScrape(req: { method?: string }, res: ServerResponse, { contentType, body }: Scrape): void {
  if (res.destroyed) return;
  res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : body);
}

export function metricsEndpoint({ processes, upstreams, allow }: MetricsEndpointOptions) {
  return async function handleMetrics(ctx: RequestContext): Promise<void> {
    if (refused(ctx, '/metrics', allow)) return;
    sendScrape(ctx.req, ctx.res, await scrapeMetrics({ processes, upstreams }));
  };
}
