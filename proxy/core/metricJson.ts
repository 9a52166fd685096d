// The form of a metric between the proxy's processes (a worker's share of /metrics and /server-status, the
// primary's sum of departed workers): prom-client's JSON, so any process can add shares without a registry.
/** A metric as prom-client's getMetricsAsJSON() gives it and AggregatorRegistry.aggregate() takes it. */
export interface MetricJson {
  name: string;
  help: string;
  type: string;
  aggregator: string;
  values: { labels: Record<string, string | number>; value: number; metricName?: string }[];
}
