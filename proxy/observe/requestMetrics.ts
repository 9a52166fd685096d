// One process's request counts for /metrics and /server-status. Counting a request is a few additions into
// typed arrays (prom-client's own observe() builds a label key string per call, about 0.35 µs); prom-client
// is loaded and its metrics built only when scraped.
import type { MetricJson } from '../core/metricJson.ts';
import { ROUTE_KINDS, type RouteKind } from '../core/routeDecision.ts';

/** The methods labelled by name; any other is `OTHER`, so a client cannot mint label values. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'CONNECT', 'TRACE', 'OTHER'] as const;
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;
/** Seconds; from a cached file (well under 1 ms) to the default max_execution_time (30 s). */
export const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const;

function methodIndex(method: string | undefined): number {
  switch (method) {
    case 'GET':
      return 0;
    case 'HEAD':
      return 1;
    case 'POST':
      return 2;
    case 'PUT':
      return 3;
    case 'DELETE':
      return 4;
    case 'PATCH':
      return 5;
    case 'OPTIONS':
      return 6;
    case 'CONNECT':
      return 7;
    case 'TRACE':
      return 8;
    default:
      return 9;
  }
}

const FIRST_STATUS = 100;
const STATUS_CODES = 900;

const classIndex = (status: number) => Math.min(Math.max(Math.floor(status / 100), 1), 5) - 1;

/** One process's counts since it started; record() allocates nothing. */
export class RequestMetrics {
  private readonly requests = new Float64Array(ROUTE_KINDS.length * METHODS.length * CLASSES.length);
  private readonly bytes = new Float64Array(ROUTE_KINDS.length);
  /** Per kind, observations per bucket (not cumulative), the last one past every bound. */
  private readonly buckets = new Float64Array(ROUTE_KINDS.length * (DURATION_BUCKETS.length + 1));
  private readonly durationSums = new Float64Array(ROUTE_KINDS.length);
  /** Responses by status code (Node sends 100 to 999), for the status page's StatusNNN lines. */
  private readonly statuses = new Float64Array(STATUS_CODES);

  /** A response that ended (finished or cut), `seconds` after its request arrived. */
  record(kind: RouteKind, method: string | undefined, status: number, seconds: number, bytes: number): void {
    this.count(kind, method, status, bytes);
    let bucket = 0;
    while (bucket < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[bucket]) bucket++;
    this.buckets[kind * (DURATION_BUCKETS.length + 1) + bucket] += 1;
    this.durationSums[kind] += seconds;
  }

  /** A request Node's parser refused, or a CONNECT: answered at once, so it has no duration. */
  count(kind: RouteKind, method: string | undefined, status: number, bytes: number): void {
    this.requests[(kind * METHODS.length + methodIndex(method)) * CLASSES.length + classIndex(status)] += 1;
    this.bytes[kind] += bytes;
    if (status >= FIRST_STATUS && status < FIRST_STATUS + STATUS_CODES) this.statuses[status - FIRST_STATUS] += 1;
  }

  /** The request counters and the duration histogram, in prom-client's JSON form. */
  async toJson(): Promise<MetricJson[]> {
    const { Counter, Registry } = await import('prom-client');
    const registry = new Registry();
    const requests = new Counter({
      name: 'extqs_http_requests_total',
      help: 'Requests answered by the proxy (one per access.log line), by route kind, method and status class.',
      labelNames: ['kind', 'method', 'status_class'],
      registers: [registry],
    });
    const bytes = new Counter({
      name: 'extqs_http_response_body_bytes_total',
      help: "Response body bytes sent to clients (the access log's %b), by route kind.",
      labelNames: ['kind'],
      registers: [registry],
    });
    ROUTE_KINDS.forEach((kind, k) => {
      let seen = false;
      METHODS.forEach((method, m) =>
        CLASSES.forEach((statusClass, c) => {
          const n = this.requests[(k * METHODS.length + m) * CLASSES.length + c];
          if (n === 0) return;
          seen = true;
          requests.inc({ kind, method, status_class: statusClass }, n);
        }),
      );
      if (seen) bytes.inc({ kind }, this.bytes[k]);
    });
    const responses = new Counter({
      name: 'extqs_http_responses_total',
      help: "Responses ended, by status code (/server-status's StatusNNN lines).",
      labelNames: ['code'],
      registers: [registry],
    });
    this.statuses.forEach((n, i) => {
      if (n > 0) responses.inc({ code: String(FIRST_STATUS + i) }, n);
    });
    return [...((await registry.getMetricsAsJSON()) as unknown as MetricJson[]), this.durationJson()];
  }

  /**
   * prom-client's Histogram takes observations one at a time and has no way to be given bucket counts,
   * so the histogram is written in the form its get() returns, which aggregate() sums bucket by bucket.
   */
  private durationJson(): MetricJson {
    const name = 'extqs_http_request_duration_seconds';
    const values: MetricJson['values'] = [];
    ROUTE_KINDS.forEach((kind, k) => {
      const counts = this.buckets.subarray(k * (DURATION_BUCKETS.length + 1), (k + 1) * (DURATION_BUCKETS.length + 1));
      let cumulative = 0;
      DURATION_BUCKETS.forEach((le, b) => {
        cumulative += counts[b];
        values.push({ labels: { le, kind }, value: cumulative, metricName: `${name}_bucket` });
      });
      cumulative += counts[DURATION_BUCKETS.length];
      if (cumulative === 0) {
        values.length -= DURATION_BUCKETS.length; // a kind never seen has no series
        return;
      }
      values.push({ labels: { le: '+Inf', kind }, value: cumulative, metricName: `${name}_bucket` });
      values.push({ labels: { kind }, value: this.durationSums[k], metricName: `${name}_sum` });
      values.push({ labels: { kind }, value: cumulative, metricName: `${name}_count` });
    });
    return {
      name,
      help: 'Time from the arrival of a request to the end of its response, by route kind.',
      type: 'histogram',
      aggregator: 'sum',
      values,
    };
  }
}
