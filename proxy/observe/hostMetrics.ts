// The hosts' figures in a scrape: each host's /status summary as metrics, labelled with its upstream.
import type { MetricJson } from '../core/metricJson.ts';
import type { StatusReport } from './statusPage.ts';

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
