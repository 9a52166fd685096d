// One proxy process's share of a scrape: its request counts, its connections, when it started, and its view
// of the upstreams' health, in prom-client's JSON form (metricJson.ts) for the sum over processes.
import type { MetricJson } from '../core/metricJson.ts';
import type { RequestMetrics } from './requestMetrics.ts';
import type { Upstreams } from '../forward/upstreams.ts';

/** What one proxy process adds to a scrape besides its request counts. */
export interface ProcessGauges {
  startedAt: Date;
  inFlight: number;
  connections: number;
  /** HTTP/2 connections ended with GOAWAY ENHANCE_YOUR_CALM for resetting streams too fast (http2ResetFlood.ts). */
  resetFloodGoaways: number;
}

/**
 * When the proxy started, as a share of its own: the earliest of the shares summed wins, so the proxy's
 * primary, whose share this is, keeps the start time (and the uptime) of the whole proxy when workers are replaced.
 */
export function startTimeJson(startedAt: Date): MetricJson {
  return {
    name: 'extqs_proxy_start_time_seconds',
    help: 'When the proxy started, in seconds since the epoch (/server-status RestartTime).',
    type: 'gauge',
    aggregator: 'min',
    values: [{ labels: {}, value: startedAt.getTime() / 1000 }],
  };
}

/** One process's whole share of a scrape: its requests, its connections and its view of the upstreams. */
export async function processMetricsJson(requests: RequestMetrics, gauges: ProcessGauges, upstreams: Upstreams): Promise<MetricJson[]> {
  const { Counter, Gauge, Registry } = await import('prom-client');
  const registry = new Registry();
  const registers = [registry];
  new Gauge({ name: 'extqs_proxy_workers', help: 'Proxy processes whose figures this answer sums.', registers }).set(1);
  new Gauge({ name: 'extqs_http_requests_in_flight', help: 'Requests being answered now, this scrape included.', registers }).set(
    gauges.inFlight,
  );
  new Gauge({ name: 'extqs_http_connections_open', help: 'Client connections open now.', registers }).set(gauges.connections);
  const up = new Gauge({
    name: 'extqs_upstream_up',
    help: 'Whether the upstream is in the rotation (1) or out after failed connects (0); 0 if any proxy worker took it out.',
    labelNames: ['upstream'],
    aggregator: 'min',
    registers,
  });
  const sent = new Counter({
    name: 'extqs_upstream_requests_total',
    help: 'Requests sent to the upstream, each attempt once.',
    labelNames: ['upstream'],
    registers,
  });
  const failed = new Counter({
    name: 'extqs_upstream_connect_failures_total',
    help: 'Failed connects to the upstream (what takes it out of the rotation).',
    labelNames: ['upstream'],
    registers,
  });
  const retry = new Gauge({
    name: 'extqs_upstream_retry_seconds',
    help: 'Seconds until an upstream out of the rotation is tried again (0 when in it); the longest of the proxy workers.',
    labelNames: ['upstream'],
    aggregator: 'max',
    registers,
  });
  new Counter({
    name: 'extqs_http2_reset_flood_goaways_total',
    help: 'HTTP/2 connections closed with GOAWAY ENHANCE_YOUR_CALM for resetting more than twice --h2-max-concurrent-streams streams in a second.',
    registers,
  }).inc(gauges.resetFloodGoaways);
  for (const u of upstreams.snapshot()) {
    up.set({ upstream: u.label }, u.state === 'up' ? 1 : 0);
    sent.inc({ upstream: u.label }, u.requests);
    failed.inc({ upstream: u.label }, u.fails);
    retry.set({ upstream: u.label }, u.retryInSeconds);
  }
  return [
    startTimeJson(gauges.startedAt),
    ...((await registry.getMetricsAsJSON()) as unknown as MetricJson[]),
    ...(await requests.toJson()),
  ];
}
