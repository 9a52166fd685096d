// Pass 5: the pages about the server, /server-status (serverStatus.ts) and /metrics (metrics.ts). A page
// that fails is logged, and answered 500 unless it began to answer.
import { KIND } from '../core/routeDecision.ts';
import type { Pass, RequestContext } from '../core/requestContext.ts';

export interface StatusPages {
  serverStatus(ctx: RequestContext, query: string): Promise<void>;
  metrics(ctx: RequestContext): Promise<void>;
}

export function statusPagesPass(pages: StatusPages): Pass {
  return (ctx) => {
    const route = ctx.route!;
    if (route.kind === 'status') {
      ctx.kind = KIND.status;
      pages.serverStatus(ctx, route.query).catch((err: Error) => pageFailed(ctx, '/server-status', err));
      return true;
    }
    if (route.kind === 'metrics') {
      ctx.kind = KIND.metrics;
      pages.metrics(ctx).catch((err: Error) => pageFailed(ctx, '/metrics', err));
      return true;
    }
    return false;
  };
}

function pageFailed(ctx: RequestContext, page: string, err: Error): void {
  ctx.log('status', 'error', `${page} failed: ${err.message}`);
  if (ctx.res.headersSent) ctx.res.destroy();
  else ctx.sendErrorPage(500);
}
