// Pass 7: /External/… to a host, through the chosen engine (forwarding.ts), its answer compressed on the fly
// when the client takes it (answerSink.ts: the engine writes the answer to ctx.answer).
import { answerSink } from '../answerSink.ts';
import { negotiateRequest, type CompressionSettings } from '../compression.ts';
import type { Forward } from '../forwarding.ts';
import { KIND } from '../metrics.ts';
import type { Pass } from '../requestContext.ts';

export function forwardPass(forward: Forward, compression: CompressionSettings): Pass {
  return (ctx) => {
    const route = ctx.route!;
    if (route.kind !== 'forward') return false;
    ctx.kind = KIND.controller;
    ctx.answer = answerSink(ctx, negotiateRequest(ctx.req, compression), { flushEachTurn: true });
    ctx.abandonForward = forward(ctx, route.url);
    return true;
  };
}
