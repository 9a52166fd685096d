// Pass 1, framing and limits of the head: what llhttp lets through but this server refuses, before anything
// reads the body. Apache's page and an error.log line; the connection closes after it.
import type { IncomingMessage } from 'node:http';
import type { ClientLimits } from '../core/clientLimits.ts';
import { isHttp2 } from '../core/protocols.ts';
import type { Pass } from '../core/requestContext.ts';

export interface FramingProblem {
  status: number;
  /** The error.log message (module core, level info). */
  message: string;
}

/** Why `req`'s head is refused, or undefined when it is not. */
export function framingProblem(
  req: IncomingMessage,
  limits: Pick<ClientLimits, 'maxHeaderSize' | 'maxHeaderFields' | 'limitRequestFieldSize'>,
): FramingProblem | undefined {
  const problem =
    (isHttp2(req) ? headerListProblem(req, limits.maxHeaderSize) : http1Problem(req)) ??
    fieldSizeProblem(req, limits.limitRequestFieldSize);
  if (problem) return problem;
  // Apache refuses a request over LimitRequestFields; Node has no such refusal (server.ts keeps every field).
  // HTTP/2's four pseudo-fields are the request line's parts, not fields.
  if (req.rawHeaders.length / 2 - (isHttp2(req) ? 4 : 0) > limits.maxHeaderFields) {
    return {
      status: 400,
      message: `request failed: the number of request header fields exceeds this server's limit (${limits.maxHeaderFields})`,
    };
  }
  return undefined;
}

function http1Problem(req: IncomingMessage): FramingProblem | undefined {
  // llhttp also parses `HTTP/2.0` and HTTP/0.9 request lines (a CR LF injected into a target makes one).
  if (req.httpVersionMajor !== 1)
    return { status: 505, message: `Unsupported HTTP version ${req.httpVersion} in ${JSON.stringify(req.url)}` };
  // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 request is faulty framing (nginx and Apache answer 400).
  if (req.httpVersionMinor === 0 && req.headers['transfer-encoding'] !== undefined) {
    return { status: 400, message: `Transfer-Encoding in an HTTP/1.0 request in ${JSON.stringify(req.url)}` };
  }
  // RFC 9112 §3.2. Node would answer this itself (requireHostHeader) before the request reaches the
  // handler: an empty body and no access-log line. Apache answers its page and logs both.
  if (req.httpVersionMinor === 1 && req.headers.host === undefined) {
    return { status: 400, message: `AH00569: client sent HTTP/1.1 request without hostname (see RFC7230 section 5.4): ${req.url ?? ''}` };
  }
  return undefined;
}

/** Apache's LOG_NAME_MAX_LEN: how much of an oversized field's name its line carries. */
const FIELD_NAME_LOGGED = 80;

/**
 * Apache's LimitRequestFieldSize (protocol.c): a field line `Name: value` longer than the limit is 400, its log
 * line naming the field (at most 80 bytes of the name, as Apache). HTTP/2's pseudo-fields are the request line's,
 * which the route's 414 bounds. Node hands values over one byte a character (latin1), so length counts bytes.
 */
function fieldSizeProblem(req: IncomingMessage, limit: number): FramingProblem | undefined {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name.length + 2 + raw[i + 1].length <= limit || name.startsWith(':')) continue;
    return { status: 400, message: `AH00561: Request header exceeds LimitRequestFieldSize: ${name.slice(0, FIELD_NAME_LOGGED)}` };
  }
  return undefined;
}

/**
 * --max-header-size for an HTTP/2 request, counted as SETTINGS_MAX_HEADER_LIST_SIZE counts (RFC 9113
 * §6.5.2: name, value and 32 bytes a field), pseudo-fields included. Node's own limit is set above it
 * (server.ts) and resets the stream without a word; this answers 431 and logs, as for HTTP/1.1.
 */
function headerListProblem(req: IncomingMessage, maxHeaderSize: number): FramingProblem | undefined {
  let size = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) size += raw[i].length + raw[i + 1].length + 32;
  if (size <= maxHeaderSize) return undefined;
  return { status: 431, message: `HTTP/2 header list of ${size} bytes is larger than the limit of ${maxHeaderSize}` };
}

export function framingPass(limits: ClientLimits): Pass {
  return (ctx) => {
    const problem = framingProblem(ctx.req, limits);
    if (!problem) return false;
    ctx.log('core', 'info', problem.message);
    ctx.res.shouldKeepAlive = false;
    ctx.sendErrorPage(problem.status);
    return true;
  };
}
