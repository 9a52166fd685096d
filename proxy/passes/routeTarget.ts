// Pass 4: what the target asks for (proxy/core/routeDecision.ts), kept on the context for the passes after it; a target
// this server cannot take is answered here with Apache's page and its error.log line.
import type { Pass } from '../core/requestContext.ts';
import { KIND, routeRequest } from '../core/routeDecision.ts';

export const routePass: Pass = (ctx) => {
  const route = (ctx.route = routeRequest(ctx.req.url ?? ''));
  if (route.kind === 'encoded-slash') {
    ctx.kind = KIND.static;
    // Apache's words (request.c), with the target as sent, as its r->unparsed_uri.
    ctx.log('core', 'info', `AH00026: found %2f (encoded '/') in URI path (${ctx.req.url}), returning 404`);
    ctx.sendErrorPage(404);
    return true;
  }
  if (route.kind === 'bad-request') {
    // A path above the root is a traversal probe, an error to Apache (AH10244); the rest is S2.
    if (route.aboveRoot) ctx.log('core', 'error', `AH10244: invalid URI path (${ctx.req.url})`);
    else ctx.log('core', 'info', `Invalid request target ${JSON.stringify(ctx.req.url)}`);
    ctx.sendErrorPage(route.status);
    return true;
  }
  return false;
};
