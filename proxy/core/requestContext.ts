// One request's facts, made once when it arrives (HTTP/1.1 and HTTP/2 alike) and handed to every pass
// (nginx's `r`, fastify's `request`): its id, its client as it arrived, its times, what the route made of
// it, the bytes its answer carried, and an error-log writer bound to it. The access line is written from it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorEntry, LogLevel } from '../../common/logFormat.ts';
import { ResponseSink, type AnswerSink } from './answerSink.ts';
import { clientAddress, clientOf } from './clientAddress.ts';
import type { ErrorPages } from './errorPages.ts';
import { bodyFollows } from './protocols.ts';
import { KIND, type ProxyRoute, type RouteKind } from './routeDecision.ts';

/** What a request's lines need of the error log (errorLog.ts's ErrorLog is one). */
export interface ErrorWriter {
  write(event: ErrorEntry): void;
}

export class RequestContext {
  /** %t: when the request arrived (wall clock). */
  readonly arrivedAt = Date.now();
  /** Monotonic, for the duration. */
  readonly startedAt = performance.now();
  /** %r's target as received, before any rewriting (an engine may rewrite req.url). */
  readonly url: string;
  /**
   * The client's address and `ip:port` as they arrived: once an HTTP/2 stream has closed its socket reads as
   * none (node:http2's proxy socket).
   */
  readonly remoteAddress: string | undefined;
  private readonly remotePort: number | undefined;
  /** `ip:port`, made when a line first needs it: most requests write none. */
  private clientText: string | undefined;
  /** What the route made of it (for /metrics); refused until the route says otherwise. */
  kind: RouteKind = KIND.refused;
  /** What its target asks for (proxy/core/routeDecision.ts), once the passes before routing have let it through. */
  route: ProxyRoute | undefined;
  /** A probe's answer: no access line unless it failed (a prober asks every few seconds). */
  quiet = false;
  /** Whether a body follows the head (protocols.ts), and whether it has ended or was refused (requestBodies.ts). */
  readonly withBody: boolean;
  bodyEnded = false;
  bodyRefused = false;
  /** Stops its forwarding: its body failed mid-way and the server answers it itself (forwarding.ts). */
  abandonForward: (() => void) | undefined;
  /** Body bytes of an answer relayed from the host, counted as they pass. */
  streamedBytes = 0;
  /** The host's answer failed mid-body and the client's was cut: %b is what passed, not what was declared. */
  cut = false;
  /** Bytes of an encoded body (answerSink.ts), counted as they leave: what mod_deflate makes %b say. */
  encodedBytes: number | undefined;
  private sink: AnswerSink | undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** X-Request-Id: the client's when well-formed (common/requestId.ts), else a new one. */
    readonly id: string,
    private readonly errorLog: ErrorWriter,
    /** The pages it may be refused with: the operator's (--error-document), else Apache's. */
    private readonly errorPages: ErrorPages,
  ) {
    this.url = req.url ?? '-';
    this.remoteAddress = req.socket.remoteAddress;
    this.remotePort = req.socket.remotePort;
    this.withBody = bodyFollows(req);
  }

  /**
   * Where a relayed answer's head and body go (answerSink.ts): the response itself unless the pass that
   * answers put an encoder in front of it. Made when first asked for.
   */
  get answer(): AnswerSink {
    return (this.sink ??= new ResponseSink(this.res));
  }

  set answer(sink: AnswerSink) {
    this.sink = sink;
  }

  /** An error.log line about this request, with its client, its Referer (as Apache appends it) and its id. */
  log(module: string, level: LogLevel, message: string, status?: string): void {
    const referer = this.req.headers.referer;
    this.errorLog.write({ module, level, status, client: this.client, message, referer, requestId: this.id });
  }

  /** Answers with the error page for `status`; an answer under way is cut instead. */
  sendErrorPage(status: number, headers?: Record<string, string>): void {
    this.errorPages.send(this.res, status, headers);
  }

  /** Apache's %b: body bytes sent, 0 for HEAD, 204 and 304. */
  bodyBytes(): number {
    const { req, res } = this;
    if (req.method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304 || !res.headersSent) return 0;
    if (this.encodedBytes !== undefined) return this.encodedBytes;
    const declared = res.getHeader('content-length');
    return declared === undefined || this.cut ? this.streamedBytes : Number(declared);
  }

  /** `ip:port` of the client, as Apache's `[client %a]` shows it. */
  get client(): string {
    return (this.clientText ??= clientOf({ remoteAddress: this.remoteAddress, remotePort: this.remotePort }));
  }

  /** %a as Apache prints it (IPv4-mapped addresses unwrapped). */
  get clientAddress(): string {
    return clientAddress(this.remoteAddress);
  }
}

/**
 * One step of the request path (passes/): answers the request and returns true, or leaves it to the next.
 * The server runs them in order (server.ts), as httpxy's web passes and vite's middlewares run.
 */
export type Pass = (ctx: RequestContext) => boolean;
