// The proxy's figures summed over its processes, the one way /metrics and /server-status both count:
// each process's share is its metrics in prom-client's JSON form (metricJson.ts), with --proxy-workers the
// primary adds what departed workers had counted (addCounts), and AggregatorRegistry.aggregate() sums them. The
// status page reads its numbers from that sum, so it always agrees with /metrics.
import type { Registry } from 'prom-client';
import { nullObject } from '../../common/nullObject.ts';
import type { MetricJson } from '../core/metricJson.ts';
import type { UpstreamSnapshot, UpstreamState } from '../forward/upstreams.ts';

/** The shares summed, series by series, each metric by its own aggregator (sum, min for `up`, …). */
export async function sumShares(shares: readonly MetricJson[][]): Promise<Registry> {
  const { AggregatorRegistry } = await import('prom-client');
  return AggregatorRegistry.aggregate(shares as unknown as Parameters<typeof AggregatorRegistry.aggregate>[0]);
}

/** A series' identity within its metric: the sample's name (a histogram has three) and its labels. */
function seriesKey({ metricName, labels }: MetricJson['values'][number]): string {
  return `${metricName ?? ''}|${JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
}

/**
 * Adds the counters and histograms of `share` (a process gone) into `into`, series by series; its gauges
 * said what was true while it lived, and are dropped. The series of a share are bounded (labels are
 * route kinds, methods, status classes and configured upstreams), so the lookups stay small.
 */
export function addCounts(into: MetricJson[], share: readonly MetricJson[]): void {
  for (const metric of share) {
    if (metric.type !== 'counter' && metric.type !== 'histogram') continue;
    let target = into.find((m) => m.name === metric.name);
    if (!target) into.push((target = { ...metric, values: [] }));
    const index = new Map(target.values.map((v) => [seriesKey(v), v]));
    for (const value of metric.values) {
      const same = index.get(seriesKey(value));
      if (same) same.value += value.value;
      else target.values.push({ ...value, labels: { ...value.labels } });
    }
  }
}

/** What /server-status shows of the proxy itself. */
export interface ProxyFigures {
  startedAt: Date;
  requests: number;
  bytes: number;
  statuses: Record<string, number>;
  inFlight: number;
  connections: number;
  upstreams: UpstreamSnapshot[];
}

/**
 * The status page's figures, read from the summed shares. Their upstream labels are stable names (`local`);
 * the page names each upstream by its address, which `upstreams` gives.
 */
export async function proxyFiguresOf(summed: Registry, upstreams: readonly UpstreamState[]): Promise<ProxyFigures> {
  const nameOf = new Map(upstreams.map((u) => [u.label, u.name]));
  const metrics = (await summed.getMetricsAsJSON()) as unknown as MetricJson[];
  const values = (name: string) => metrics.find((m) => m.name === name)?.values ?? [];
  const total = (name: string) => values(name).reduce((sum, v) => sum + v.value, 0);
  const byUpstream = (name: string) => new Map(values(name).map((v) => [String(v.labels.upstream), v.value]));
  const statuses = nullObject<number>();
  for (const { labels, value } of values('extqs_http_responses_total')) statuses[String(labels.code)] = value;
  const up = byUpstream('extqs_upstream_up');
  const fails = byUpstream('extqs_upstream_connect_failures_total');
  const retry = byUpstream('extqs_upstream_retry_seconds');
  const started = values('extqs_proxy_start_time_seconds')[0]?.value;
  return {
    startedAt: started === undefined ? new Date() : new Date(started * 1000),
    requests: total('extqs_http_requests_total'),
    bytes: total('extqs_http_response_body_bytes_total'),
    statuses,
    inFlight: total('extqs_http_requests_in_flight'),
    connections: total('extqs_http_connections_open'),
    upstreams: values('extqs_upstream_requests_total').map(({ labels, value }) => {
      const label = String(labels.upstream);
      return {
        name: nameOf.get(label) ?? label,
        label,
        state: up.get(label) === 0 ? 'down' : 'up',
        requests: value,
        fails: fails.get(label) ?? 0,
        retryInSeconds: retry.get(label) ?? 0,
      };
    }),
  };
}
