import { expect } from 'chai';
import { AggregatorRegistry } from 'prom-client';
import type { MetricJson } from '../../proxy/core/metricJson.ts';
import { addCounts } from '../../proxy/observe/proxyFigures.ts';
import { DURATION_BUCKETS, RequestMetrics } from '../../proxy/observe/requestMetrics.ts';
import { KIND } from '../../proxy/core/routeDecision.ts';

describe('the request metrics', () => {
  it('counts by kind, method and status class, with unknown methods as OTHER, and histograms the durations', async () => {
    const m = new RequestMetrics();
    m.record(KIND.static, 'GET', 404, 0.0002, 196);
    m.record(KIND.static, 'GET', 404, 0.003, 196);
    m.record(KIND.controller, 'BREW', 500, 45, 531);
    m.count(KIND.refused, undefined, 400, 226);
    const text = await AggregatorRegistry.aggregate([await m.toJson()]).metrics();
    expect(text).to.contain('extqs_http_requests_total{kind="static",method="GET",status_class="4xx"} 2\n');
    expect(text).to.contain('extqs_http_requests_total{kind="controller",method="OTHER",status_class="5xx"} 1\n');
    expect(text).to.contain('extqs_http_requests_total{kind="refused",method="OTHER",status_class="4xx"} 1\n');
    expect(text).to.contain('extqs_http_response_body_bytes_total{kind="static"} 392\n');
    expect(text).to.contain('extqs_http_responses_total{code="404"} 2\n');
    expect(text).to.contain('extqs_http_responses_total{code="400"} 1\n');
    // Cumulative buckets; 45 s lies past the last bound, so only in +Inf.
    expect(text).to.contain('extqs_http_request_duration_seconds_bucket{le="0.0005",kind="static"} 1\n');
    expect(text).to.contain('extqs_http_request_duration_seconds_bucket{le="0.005",kind="static"} 2\n');
    expect(text).to.contain(`extqs_http_request_duration_seconds_bucket{le="${DURATION_BUCKETS.at(-1)}",kind="controller"} 0\n`);
    expect(text).to.contain('extqs_http_request_duration_seconds_bucket{le="+Inf",kind="controller"} 1\n');
    expect(text).to.contain('extqs_http_request_duration_seconds_sum{kind="controller"} 45\n');
    // A kind never seen (and the refused, which have no duration) has no series.
    expect(text).not.to.contain('kind="metrics"');
    expect(text).not.to.match(/duration_seconds_count\{kind="refused"\}/);
  });

  it("sums two processes' shares series by series, buckets included", async () => {
    const a = new RequestMetrics();
    const b = new RequestMetrics();
    a.record(KIND.static, 'GET', 200, 0.002, 10);
    b.record(KIND.static, 'GET', 200, 0.2, 5);
    b.record(KIND.static, 'HEAD', 200, 0.2, 0);
    const text = await AggregatorRegistry.aggregate([await a.toJson(), await b.toJson()]).metrics();
    expect(text).to.contain('extqs_http_requests_total{kind="static",method="GET",status_class="2xx"} 2\n');
    expect(text).to.contain('extqs_http_response_body_bytes_total{kind="static"} 15\n');
    expect(text).to.contain('extqs_http_request_duration_seconds_bucket{le="0.0025",kind="static"} 1\n');
    expect(text).to.contain('extqs_http_request_duration_seconds_bucket{le="0.25",kind="static"} 3\n');
    expect(text).to.contain('extqs_http_request_duration_seconds_count{kind="static"} 3\n');
  });

  it("keeps a departed process's counters and histograms, series by series, and drops its gauges", async () => {
    const a = new RequestMetrics();
    const b = new RequestMetrics();
    a.record(KIND.static, 'GET', 404, 0.002, 10);
    b.record(KIND.static, 'GET', 404, 0.2, 5);
    b.record(KIND.controller, 'GET', 500, 0.2, 7);
    const gauge: MetricJson = {
      name: 'extqs_http_connections_open',
      help: 'h',
      type: 'gauge',
      aggregator: 'sum',
      values: [{ labels: {}, value: 3 }],
    };
    const departed: MetricJson[] = [];
    addCounts(departed, [...(await a.toJson()), gauge]);
    addCounts(departed, [...(await b.toJson()), gauge]);
    const text = await AggregatorRegistry.aggregate([departed]).metrics();
    expect(text).to.contain('extqs_http_requests_total{kind="static",method="GET",status_class="4xx"} 2\n');
    expect(text).to.contain('extqs_http_requests_total{kind="controller",method="GET",status_class="5xx"} 1\n');
    expect(text).to.contain('extqs_http_response_body_bytes_total{kind="static"} 15\n');
    expect(text).to.contain('extqs_http_request_duration_seconds_bucket{le="0.0025",kind="static"} 1\n');
    expect(text).to.contain('extqs_http_request_duration_seconds_bucket{le="0.25",kind="static"} 2\n');
    expect(text).to.contain('extqs_http_request_duration_seconds_count{kind="static"} 2\n');
    expect(text).not.to.contain('extqs_http_connections_open');
  });
});
