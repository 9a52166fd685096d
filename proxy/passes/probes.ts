// Pass 6: a prober's two questions, answered to any client (they tell nothing but up or not, as nginx's
// stub health checks and Prometheus's /-/healthy and /-/ready): /-/healthy is 200 while this process
// answers (liveness); /-/ready is 200 when a host has a worker able to take a request (readiness), else 503
// with an error.log line naming why. A probe that passes writes no access line.
import { hostNotReady } from '../forward/hostReadiness.ts';
import { KIND } from '../core/routeDecision.ts';
import type { Pass, RequestContext } from '../core/requestContext.ts';
import type { Upstreams } from '../forward/upstreams.ts';

export function probesPass(upstreams: Upstreams): Pass {
  return (ctx) => {
    const route = ctx.route!;
    if (route.kind !== 'probe') return false;
    ctx.kind = KIND.status;
    const { method } = ctx.req;
    if (method !== 'GET' && method !== 'HEAD') {
      ctx.sendErrorPage(405, { Allow: 'GET, HEAD' });
      return true;
    }
    if (route.probe === 'live') answer(ctx, 'alive');
    else
      void anyHostReady(upstreams).then((reasons) => {
        if (reasons === undefined) return answer(ctx, 'ready');
        ctx.log('proxy', 'error', `not ready: no host has a worker able to take a request (${reasons})`);
        if (!ctx.res.headersSent) ctx.sendErrorPage(503);
      });
    return true;
  };
}

function answer(ctx: RequestContext, word: string): void {
  ctx.quiet = true;
  ctx.res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' }).end(`${word}\n`);
}

/** Undefined when one host is ready, else each host's reason. */
async function anyHostReady(upstreams: Upstreams): Promise<string | undefined> {
  const reasons = await Promise.all(upstreams.all.map(async (state) => ({ name: state.name, why: await hostNotReady(state) })));
  if (reasons.some(({ why }) => why === undefined)) return undefined;
  return reasons.map(({ name, why }) => `${name}: ${why}`).join('; ');
}
