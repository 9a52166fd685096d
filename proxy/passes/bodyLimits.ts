// Pass 3, the body's limits known from the head: LimitRequestBody for a declared length (forwarding counts
// a chunked body as it passes: forwarding.ts), and --request-timeout for an HTTP/2 body, which node:http2
// does not time (node:http does, for HTTP/1.1).
import { constants as http2Constants, type Http2ServerResponse } from 'node:http2';
import type { ClientLimits } from '../core/clientLimits.ts';
import { isHttp2 } from '../core/protocols.ts';
import type { Pass, RequestContext } from '../core/requestContext.ts';

export function bodyLimitsPass(limits: ClientLimits): Pass {
  return (ctx) => {
    const declared = ctx.req.headers['content-length'];
    if (limits.limitRequestBody > 0 && declared !== undefined && Number(declared) > limits.limitRequestBody) {
      ctx.log(
        'http',
        'info',
        `AH01588: Requested content-length of ${declared} is larger than the configured limit of ${limits.limitRequestBody}`,
      );
      ctx.res.shouldKeepAlive = false;
      ctx.sendErrorPage(413);
      return true;
    }
    if (ctx.withBody && isHttp2(ctx.req)) bodyDeadline(ctx, limits.requestTimeout);
    return false;
  };
}

/**
 * Past --request-timeout the stream is answered 408 (and the rest of its body refused), or reset once an
 * answer has begun, and logged.
 */
function bodyDeadline(ctx: RequestContext, requestTimeout: number): void {
  const { req, res } = ctx;
  const timer = setTimeout(
    () => {
      if (req.complete || res.writableEnded) return;
      ctx.log('reqtimeout', 'info', `AH01382: Request body read timeout (--request-timeout ${requestTimeout} s)`);
      // Unlike HTTP/1.1, where the late body still fills the connection, the stream can take the answer;
      // then RST_STREAM NO_ERROR tells the client to stop sending (RFC 9113 §8.1), the session going on.
      ctx.sendErrorPage(408);
      (res as unknown as Http2ServerResponse).stream.close(http2Constants.NGHTTP2_NO_ERROR);
    },
    Math.max(0, requestTimeout * 1000 - (Date.now() - ctx.arrivedAt)),
  );
  const clear = () => clearTimeout(timer);
  req.once('end', clear);
  res.once('close', clear);
}
