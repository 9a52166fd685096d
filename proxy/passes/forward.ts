// Pass 8: /External/… to a host, through the chosen engine (forwarding.ts), its answer compressed on the fly
// when the client takes it (answerSink.ts: the engine writes the answer to ctx.answer).
import { answerSink } from '../core/answerSink.ts';
import { negotiateRequest, type CompressionSettings } from '../core/compression.ts';
import type { Forward } from '../forward/forwarding.ts';
import { KIND } from '../core/routeDecision.ts';
import { isHttp2, responseGone } from '../core/protocols.ts';
import type { Pass } from '../core/requestContext.ts';

export function forwardPass(forward: Forward, compression: CompressionSettings): Pass {
  return (ctx) => {
    const route = ctx.route!;
    if (route.kind !== 'forward') return false;
    ctx.kind = KIND.controller;
    ctx.answer = answerSink(ctx, negotiateRequest(ctx.req, compression), { flushEachTurn: true });
    if (!isHttp2(ctx.req)) {
      ctx.abandonForward = forward(ctx, route.url);
      return true;
    }
    // node:http2 runs this as it reads the stream's HEADERS frame, before a RST_STREAM read with it (rapid reset,
    // CVE-2023-44487): a turn later such a stream is closed, and no host call starts for it.
    let abandoned = false;
    ctx.abandonForward = () => (abandoned = true);
    setImmediate(() => {
      if (abandoned || responseGone(ctx.res)) return;
      ctx.abandonForward = forward(ctx, route.url);
    });
    return true;
  };
}
