// Pass 8: /External/… to a host, through the chosen engine (forwarding.ts), its answer compressed on the fly
// when the client takes it (answerSink.ts: the engine writes the answer to ctx.answer).
import { answerSink } from '../core/answerSink.ts';
import { negotiateRequest, type CompressionSettings } from '../core/compression.ts';
import type { Forward } from '../forward/forwarding.ts';
import { KIND } from '../core/routeDecision.ts';
import type { Pass } from '../core/requestContext.ts';

export function forwardPass(forward: Forward, compression: CompressionSettings): Pass {
  return (ctx) => {
    const route = ctx.route!;
    if (route.kind !== 'forward') return false;
    ctx.kind = KIND.controller;
    ctx.answer = answerSink(ctx, negotiateRequest(ctx.req, compression), { flushEachTurn: true });
    // An HTTP/2 stream reset in the read that opened it never gets here (proxy/server/server.ts's handleRequest).
    ctx.abandonForward = forward(ctx, route.url);
    return true;
  };
}
