// Pass 7: a path under www/public, answered from memory or by send (staticFiles.ts), compressed when the
// client takes it (compression.ts).
import { negotiateRequest, type CompressionSettings } from '../core/compression.ts';
import { KIND } from '../core/routeDecision.ts';
import type { Pass } from '../core/requestContext.ts';
import type { ServeStatic } from '../static/staticFiles.ts';

export function filesPass(serveStatic: ServeStatic, compression: CompressionSettings): Pass {
  return (ctx) => {
    const route = ctx.route!;
    if (route.kind !== 'static') return false;
    ctx.kind = KIND.static;
    serveStatic(ctx, route.path, negotiateRequest(ctx.req, compression));
    return true;
  };
}
