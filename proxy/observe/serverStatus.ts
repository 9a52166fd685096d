// /server-status (Apache mod_status): the proxy's counters and its upstreams' health, summed as /metrics
// sums them (proxyFigures.ts), and each host's own /status summary, for clients on --status-allow only
// (loopback by default; others get 403 and a log line). /metrics (metrics.ts) shares the guard and the hosts' /status.
import { VERSION } from '../../common/version.ts';
import type { BlockList } from 'node:net';
import { allowed } from '../../common/clientList.ts';
import type { RequestContext } from '../core/requestContext.ts';
import { renderAuto, renderHtml, renderJson, type HostSummary, type StatusReport } from './statusPage.ts';
import type { Upstreams, UpstreamState } from '../forward/upstreams.ts';
import type { MetricJson } from '../core/metricJson.ts';
import { proxyFiguresOf, sumShares } from './proxyFigures.ts';

const SERVER_VERSION = `extqs/${VERSION} (Node.js ${process.version})`;

/** A host that does not answer its /status within this long is shown as not answering. */
const HOST_STATUS_TIMEOUT_MS = 1_000;
const MAX_REFRESH_SECONDS = 3_600;

/**
 * Answers 403 to a client not on --status-allow (with mod_authz_core's line) and 405 to a method other
 * than GET or HEAD; true when it did. The guard of every page about the server (`path` names it).
 */
export function refused(ctx: RequestContext, path: string, allow: BlockList): boolean {
  if (!allowed(allow, ctx.remoteAddress)) {
    ctx.log('authz_core', 'error', `AH01630: client denied by server configuration: ${path}`);
    ctx.sendErrorPage(403);
    return true;
  }
  const { method } = ctx.req;
  if (method !== 'GET' && method !== 'HEAD') {
    ctx.log('core', 'info', `Method ${method} not allowed for ${path}`);
    ctx.sendErrorPage(405, { Allow: 'GET, HEAD' });
    return true;
  }
  return false;
}

/** One host's /status, or why it could not be read. */
export function hostStatus(upstream: UpstreamState): Promise<StatusReport['hosts'][number]> {
  const { target, name } = upstream;
  return new Promise((resolve) => {
    const req = target.request({ path: '/status', agent: false, timeout: HOST_STATUS_TIMEOUT_MS }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => {
        try {
          const summary = JSON.parse(body) as HostSummary;
          if (res.statusCode !== 200 || typeof summary.workers !== 'number') throw new Error(`status ${res.statusCode}`);
          resolve({ upstream: name, summary });
        } catch (err) {
          resolve({ upstream: name, error: `unreadable /status (${(err as Error).message})` });
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${HOST_STATUS_TIMEOUT_MS} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ upstream: name, error: err.code ?? err.message }));
    req.end();
  });
}

export interface ServerStatusOptions {
  /** This process's share, or every proxy worker's (--proxy-workers): the page shows their sum, as /metrics does. */
  shares: () => Promise<MetricJson[][]>;
  upstreams: Upstreams;
  allow: BlockList;
}

export function serverStatus({ shares, upstreams, allow }: ServerStatusOptions) {
  return async function handleServerStatus(ctx: RequestContext, query: string): Promise<void> {
    if (refused(ctx, '/server-status', allow)) return;
    const { req, res } = ctx;
    const params = new URLSearchParams(query);
    const refresh = params.get('refresh');
    if (refresh !== null && !(/^\d{1,4}$/.test(refresh) && Number(refresh) >= 1 && Number(refresh) <= MAX_REFRESH_SECONDS)) {
      ctx.log('status', 'info', `Bad refresh ${JSON.stringify(refresh)} for /server-status: 1 to ${MAX_REFRESH_SECONDS} seconds`);
      return ctx.sendErrorPage(400);
    }

    const [proxy, hosts] = await Promise.all([
      shares()
        .then(sumShares)
        .then((summed) => proxyFiguresOf(summed, upstreams.all)),
      Promise.all(upstreams.all.map(hostStatus)),
    ]);
    if (res.destroyed) return; // the client left while the workers and hosts were asked
    const report: StatusReport = { serverVersion: SERVER_VERSION, now: new Date(), ...proxy, hosts };
    const [type, body] = params.has('json')
      ? ['application/json', renderJson(report)]
      : params.has('auto')
        ? ['text/plain; charset=utf-8', renderAuto(report)]
        : ['text/html; charset=utf-8', renderHtml(report, refresh === null ? undefined : Number(refresh))];
    const headers: Record<string, string | number> = {
      'Content-Type': type,
      'Content-Length': Buffer.byteLength(body),
      'Cache-Control': 'no-store',
    };
    if (refresh !== null) headers.Refresh = refresh;
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}
