// /metrics: the proxy's and its hosts' figures in Prometheus's text format, for clients on --status-allow.
// Counting a request is a few additions into typed arrays (prom-client's own observe() builds a label
// key string per call, about 0.35 µs); prom-client is loaded and its metrics built only when scraped.
import type { ServerResponse } from 'node:http';
import type { BlockList } from 'node:net';
import type { RequestContext } from './requestContext.ts';
import { sumShares } from './proxyFigures.ts';
import { hostStatus, refused } from './serverStatus.ts';
import type { StatusReport } from './statusPage.ts';
import type { Upstreams, UpstreamState } from './upstreams.ts';

/** A metric as prom-client's getMetricsAsJSON() gives it and AggregatorRegistry.aggregate() takes it. */
export interface MetricJson {
  name: string;
  help: string;
  type: string;
  aggregator: string;
  values: { labels: Record<string, string | number>; value: number; metricName?: string }[];
}

/** What the route decided for a request; `refused` is one answered before or instead of routing (400, 413, 505…). */
const ROUTE_KINDS = ['controller', 'static', 'status', 'metrics', 'refused'] as const;
/** Indices into ROUTE_KINDS, so counting needs no string. */
export const KIND = { controller: 0, static: 1, status: 2, metrics: 3, refused: 4 } as const;
export type RouteKind = (typeof KIND)[keyof typeof KIND];

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

/** Each host's /status as metrics, labelled with its upstream; asked once per scrape, whatever the proxy workers. */
export async function hostMetricsJson(hosts: StatusReport['hosts']): Promise<MetricJson[]> {
  const { Counter, Gauge, Registry } = await import('prom-client');
  const registry = new Registry();
  const registers = [registry];
  const counter = (name: string, help: string, labelNames: string[]) => new Counter({ name, help, labelNames, registers });
  const gauge = (name: string, help: string, labelNames: string[]) => new Gauge({ name, help, labelNames, registers });
  const up = gauge('extqs_host_up', 'Whether the host answered its /status within 1 s (1) or not (0).', ['upstream']);
  const workers = gauge('extqs_host_workers', "The host's worker processes, by state (starting, idle, busy, retiring, unresponsive).", [
    'upstream',
    'state',
  ]);
  const accepted = counter('extqs_host_requests_total', 'Controller requests the host has accepted since its pool started.', ['upstream']);
  const restarts = counter(
    'extqs_host_worker_restarts_total',
    'Host workers replaced: after an unexpected exit (reason exited) or at their own request (reason recycled).',
    ['upstream', 'reason'],
  );
  // php-fpm's pool fields, as php-fpm_exporter names them (phpfpm_listen_queue…).
  const pool = {
    listenQueue: gauge('extqs_host_listen_queue', 'Requests waiting for a free host worker now (php-fpm listen queue).', ['upstream']),
    maxListenQueue: gauge('extqs_host_max_listen_queue', 'The most requests that have waited at once since the pool started.', [
      'upstream',
    ]),
    listenQueueLen: gauge('extqs_host_listen_queue_length', 'Requests that may wait before 503 (--listen-backlog).', ['upstream']),
    idleProcesses: gauge('extqs_host_idle_processes', 'Host workers waiting for a request.', ['upstream']),
    activeProcesses: gauge('extqs_host_active_processes', 'Host workers running a request.', ['upstream']),
    totalProcesses: gauge('extqs_host_total_processes', 'Host worker processes, starting and retiring included.', ['upstream']),
    maxActiveProcesses: gauge('extqs_host_max_active_processes', 'The most host workers running requests at once since the pool started.', [
      'upstream',
    ]),
    blockedProcesses: gauge(
      'extqs_host_blocked_processes',
      'Host workers whose event loop has not turned for a while: they are sent nothing new until it does.',
      ['upstream'],
    ),
    requestsInFlight: gauge('extqs_host_requests_in_flight', 'Controller requests the host workers run now, summed.', ['upstream']),
    workerConcurrency: gauge(
      'extqs_host_worker_concurrency',
      'The most requests one host worker runs at once (--worker-concurrency; 0 = unlimited).',
      ['upstream'],
    ),
    maxChildrenReached: counter(
      'extqs_host_max_children_reached_total',
      'Times the pool wanted another worker and was at --workers (dynamic and ondemand).',
      ['upstream'],
    ),
  } as const;
  const perController = (name: string, help: string) => counter(name, help, ['upstream', 'controller']);
  const requests = perController('extqs_host_controller_requests_total', 'Requests for the controller, summed over the host workers.');
  const errors = perController(
    'extqs_host_controller_errors_total',
    'Requests the controller failed (threw, rejected, or its result not sendable).',
  );
  const loadFailures = perController(
    'extqs_host_controller_load_failures_total',
    'Requests failed because the controller could not be loaded.',
  );
  const aborts = perController(
    'extqs_host_controller_aborts_total',
    'Requests whose client left while the controller ran (not counted as errors).',
  );
  const reloads = perController(
    'extqs_host_controller_reloads_total',
    'Versions of the controller installed after a change on disk, each host worker counted.',
  );
  for (const { upstream, summary } of hosts) {
    up.set({ upstream }, summary ? 1 : 0);
    if (!summary) continue;
    for (const [state, n] of Object.entries(summary.states)) workers.set({ upstream, state }, n);
    accepted.inc({ upstream }, summary.acceptedRequests);
    for (const [key, metric] of Object.entries(pool) as [keyof typeof pool, (typeof pool)[keyof typeof pool]][]) {
      const value = summary[key];
      if (value === undefined) continue;
      if ('set' in metric) metric.set({ upstream }, value);
      else metric.inc({ upstream }, value);
    }
    if (summary.restarts) {
      restarts.inc({ upstream, reason: 'exited' }, summary.restarts.exited);
      restarts.inc({ upstream, reason: 'recycled' }, summary.restarts.recycled);
    }
    for (const [controller, c] of Object.entries(summary.controllers)) {
      requests.inc({ upstream, controller }, c.requests);
      errors.inc({ upstream, controller }, c.errors);
      loadFailures.inc({ upstream, controller }, c.loadFailures);
      if (c.reloads !== undefined) reloads.inc({ upstream, controller }, c.reloads);
      if (c.aborts !== undefined) aborts.inc({ upstream, controller }, c.aborts);
    }
  }
  return (await registry.getMetricsAsJSON()) as unknown as MetricJson[];
}

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
