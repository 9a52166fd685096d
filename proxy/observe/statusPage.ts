// The /server-status page in Apache mod_status's three forms: HTML for a person (with ?refresh=N),
// `?auto` key: value lines for scripts that read Apache's, and `?json`. Pure: a report in, text out.
import type { UpstreamSnapshot } from '../forward/upstreams.ts';

/** What a host's /status says, as far as this page shows it (host/wire/stats.ts has the whole shape). */
export interface HostSummary {
  pid: number;
  workers: number;
  states: Record<string, number>;
  acceptedRequests: number;
  /** Absent from a host older than the proxy, as are `reloads`. */
  restarts?: { exited: number; recycled: number };
  controllers: Record<string, { requests: number; errors: number; loadFailures: number; reloads?: number; aborts?: number }>;
  /** php-fpm's pool fields (host/wire/stats.ts PoolFields); absent from a host older than the proxy. */
  processManager?: string;
  processManagerSettings?: string;
  listenQueue?: number;
  maxListenQueue?: number;
  listenQueueLen?: number;
  idleProcesses?: number;
  activeProcesses?: number;
  totalProcesses?: number;
  maxActiveProcesses?: number;
  maxChildrenReached?: number;
  blockedProcesses?: number;
  requestsInFlight?: number;
  workerConcurrency?: number;
}

/** php-fpm's words for the pool fields of a host's /status, in its order. */
export const POOL_FIELDS = [
  ['processManager', 'process manager'],
  ['listenQueue', 'listen queue'],
  ['maxListenQueue', 'max listen queue'],
  ['listenQueueLen', 'listen queue len'],
  ['idleProcesses', 'idle processes'],
  ['activeProcesses', 'active processes'],
  ['totalProcesses', 'total processes'],
  ['maxActiveProcesses', 'max active processes'],
  ['maxChildrenReached', 'max children reached'],
  ['blockedProcesses', 'blocked processes'],
  ['requestsInFlight', 'requests in flight'],
  ['workerConcurrency', 'worker concurrency'],
] as const;

/** `process manager: static, listen queue: 0, …` (`process_manager=static …` for ?auto). */
function poolFieldsOf(s: HostSummary, auto: boolean): string {
  return POOL_FIELDS.filter(([key]) => s[key] !== undefined)
    .map(([key, words]) => (auto ? `${words.replaceAll(' ', '_')}=${String(s[key])}` : `${words}: ${String(s[key])}`))
    .join(auto ? ' ' : ', ');
}

export interface StatusReport {
  serverVersion: string;
  now: Date;
  startedAt: Date;
  /** Responses ended since start, and their body bytes. */
  requests: number;
  bytes: number;
  /** Requests being answered now (this one included) and open client connections. */
  inFlight: number;
  connections: number;
  /** Responses by status code. */
  statuses: Record<string, number>;
  upstreams: UpstreamSnapshot[];
  /** Each upstream's /status, or why it did not answer. */
  hosts: { upstream: string; summary?: HostSummary; error?: string }[];
}

function uptimeSeconds(report: StatusReport): number {
  return Math.max(0, Math.floor((report.now.getTime() - report.startedAt.getTime()) / 1000));
}

/** Apache's "1 day 2 hours 3 minutes 4 seconds". */
export function formatUptime(seconds: number): string {
  const parts: string[] = [];
  for (const [unit, size] of [
    ['day', 86_400],
    ['hour', 3_600],
    ['minute', 60],
  ] as const) {
    const n = Math.floor(seconds / size);
    seconds -= n * size;
    if (n > 0) parts.push(`${n} ${unit}${n === 1 ? '' : 's'}`);
  }
  if (seconds > 0 || parts.length === 0) parts.push(`${seconds} second${seconds === 1 ? '' : 's'}`);
  return parts.join(' ');
}

function rates(report: StatusReport) {
  const uptime = uptimeSeconds(report);
  return {
    uptime,
    reqPerSec: uptime > 0 ? report.requests / uptime : 0,
    bytesPerSec: uptime > 0 ? report.bytes / uptime : 0,
    bytesPerReq: report.requests > 0 ? report.bytes / report.requests : 0,
  };
}

const round = (n: number, digits = 3) => Number(n.toFixed(digits));

export function renderJson(report: StatusReport): string {
  const { uptime, reqPerSec, bytesPerSec, bytesPerReq } = rates(report);
  return JSON.stringify({
    serverVersion: report.serverVersion,
    currentTime: report.now.toISOString(),
    restartTime: report.startedAt.toISOString(),
    uptimeSeconds: uptime,
    totalAccesses: report.requests,
    totalBytes: report.bytes,
    reqPerSec: round(reqPerSec),
    bytesPerSec: round(bytesPerSec),
    bytesPerReq: round(bytesPerReq),
    requestsInFlight: report.inFlight,
    connections: report.connections,
    statuses: report.statuses,
    // The page names an upstream by its address; the label is /metrics' own.
    upstreams: report.upstreams.map(({ label: _label, ...upstream }) => upstream),
    hosts: report.hosts,
  });
}

/** mod_status `?auto`: Apache's key names where one exists, so existing scrapers read them. */
export function renderAuto(report: StatusReport): string {
  const { uptime, reqPerSec, bytesPerSec, bytesPerReq } = rates(report);
  const lines = [
    `ServerVersion: ${report.serverVersion}`,
    `CurrentTime: ${report.now.toUTCString()}`,
    `RestartTime: ${report.startedAt.toUTCString()}`,
    `ServerUptimeSeconds: ${uptime}`,
    `ServerUptime: ${formatUptime(uptime)}`,
    `Uptime: ${uptime}`,
    `Total Accesses: ${report.requests}`,
    `Total kBytes: ${Math.floor(report.bytes / 1024)}`,
    `ReqPerSec: ${round(reqPerSec)}`,
    `BytesPerSec: ${round(bytesPerSec)}`,
    `BytesPerReq: ${round(bytesPerReq)}`,
    `BusyWorkers: ${report.inFlight}`,
    `ConnsTotal: ${report.connections}`,
    ...Object.entries(report.statuses).map(([code, n]) => `Status${code}: ${n}`),
    ...report.upstreams.map((u) => `Upstream: ${u.name} ${u.state} requests=${u.requests} fails=${u.fails}`),
    ...report.hosts.map((h) =>
      h.summary
        ? `HostWorkers: ${h.upstream} ${h.summary.workers} accepted=${h.summary.acceptedRequests}`
        : `HostWorkers: ${h.upstream} unknown`,
    ),
    ...report.hosts.flatMap((h) =>
      h.summary?.processManager !== undefined
        ? [
            `HostPool: ${h.upstream} ${poolFieldsOf(h.summary, true)}`,
            `HostPoolSettings: ${h.upstream} ${h.summary.processManagerSettings ?? ''}`,
          ]
        : [],
    ),
  ];
  return lines.join('\n') + '\n';
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (value: unknown) => String(value).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

function table(caption: string, head: string[], rows: unknown[][]): string {
  const th = head.map((h) => `<th>${esc(h)}</th>`).join('');
  const body =
    rows.length > 0
      ? rows.map((row) => `<tr>${row.map((cell) => `<td>${esc(cell)}</td>`).join('')}</tr>`).join('\n')
      : `<tr><td colspan="${head.length}">none</td></tr>`;
  return `<table>\n<caption>${esc(caption)}</caption>\n<tr>${th}</tr>\n${body}\n</table>`;
}

export function renderHtml(report: StatusReport, refreshSeconds: number | undefined): string {
  const { uptime, reqPerSec, bytesPerSec, bytesPerReq } = rates(report);
  const hostSections = report.hosts.map((host) => {
    if (!host.summary) return `<h2>Host ${esc(host.upstream)}</h2>\n<p class="down">Not answering: ${esc(host.error ?? 'unknown')}</p>`;
    const s = host.summary;
    const states = Object.entries(s.states)
      .map(([state, n]) => `${n} ${state}`)
      .join(', ');
    const controllers = Object.entries(s.controllers).map(([name, c]) => [name, c.requests, c.errors, c.loadFailures]);
    return (
      `<h2>Host ${esc(host.upstream)}</h2>\n<dl><dt>Pool pid ${esc(s.pid)}, ${esc(s.workers)} workers</dt><dt>${esc(states)}</dt>` +
      `<dt>${esc(s.acceptedRequests)} requests accepted</dt>` +
      (s.processManager !== undefined ? `<dt>${esc(poolFieldsOf(s, false))} (${esc(s.processManagerSettings ?? '')})</dt>` : '') +
      `</dl>\n` +
      table('Controllers', ['Controller', 'Requests', 'Errors', 'Load failures'], controllers)
    );
  });
  return [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8">',
    refreshSeconds === undefined ? '' : `<meta http-equiv="refresh" content="${refreshSeconds}">`,
    '<title>extqs Server Status</title>',
    '<style>body{font-family:sans-serif}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #999;padding:2px 8px;text-align:left}caption{text-align:left;font-weight:bold}.down{color:#b00}</style>',
    '</head><body>',
    '<h1>extqs Server Status</h1>',
    '<dl>',
    `<dt>Server Version: ${esc(report.serverVersion)}</dt>`,
    `<dt>Current Time: ${esc(report.now.toUTCString())}</dt>`,
    `<dt>Restart Time: ${esc(report.startedAt.toUTCString())}</dt>`,
    `<dt>Server uptime: ${esc(formatUptime(uptime))}</dt>`,
    `<dt>Total accesses: ${report.requests} - Total Traffic: ${esc((report.bytes / 1024).toFixed(1))} kB</dt>`,
    `<dt>${esc(round(reqPerSec))} requests/sec - ${esc(round(bytesPerSec))} B/second - ${esc(round(bytesPerReq))} B/request</dt>`,
    `<dt>${report.inFlight} requests currently being processed, ${report.connections} connections open</dt>`,
    '</dl>',
    table('Responses by status', ['Status', 'Count'], Object.entries(report.statuses)),
    table(
      'Upstreams',
      ['Upstream', 'State', 'Requests', 'Failed connects', 'Retried in'],
      report.upstreams.map((u) => [u.name, u.state, u.requests, u.fails, u.state === 'down' ? `${u.retryInSeconds} s` : '-']),
    ),
    ...hostSections,
    '</body></html>',
    '',
  ].join('\n');
}
