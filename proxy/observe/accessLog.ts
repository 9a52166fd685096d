// logs/access.log: one line per request, written when the response is done (finished or cut short), as
// mod_log_config does. Apache's combined layout, or JSON (--log-format json). Not levelled: every request
// has its line. The server calls record() from its one 'close' listener per response.
import type { LogSettings } from '../../common/settings.ts';
import { openLineLog, rotationOf } from '../../common/lineLog.ts';
import { accessFormatter, type AccessEntry, type LogFormat } from '../../common/logFormat.ts';
import type { LogRelay } from '../../common/logRelay.ts';
import { clientAddress } from '../core/clientAddress.ts';
import { answerAborted } from '../core/protocols.ts';
import type { RequestContext } from '../core/requestContext.ts';
import type { ProxyLogEntries, WireAccessEntry } from './workerMessages.ts';

export interface AccessLog {
  /**
   * The line for a response that has ended (finished or cut), from its context: target, time and client
   * as the request came; `bytes` is its %b (ctx.bodyBytes()), which the server's other counters take too.
   */
  record(ctx: RequestContext, bytes: number): void;
  /**
   * The line for a request Node's parser refused (it never became a request): its first line as it
   * came, the status and the bytes of the page that answered it.
   */
  recordRefused(remoteAddress: string | undefined, requestLine: string, status: number, bytes: number): void;
  /** Opens the file again by name (SIGHUP) with these settings; false if it could not be opened. */
  reopen(settings: LogSettings): boolean;
  drain(): Promise<void>;
}

/** Where a response's entry goes: access.log itself, or the primary that writes it. */
export interface AccessSink {
  write(entry: AccessEntry): void;
  /** Opens the file again by name (SIGHUP) with these settings; false if it could not be opened. */
  reopen(settings: LogSettings): boolean;
  drain(): Promise<void>;
}

/** access.log itself, each entry formatted with --log-format. */
export function accessFile(dir: string, settings: LogSettings): AccessSink {
  const log = openLineLog(dir, 'access.log', rotationOf(settings));
  // Chosen once (and on reopen), not per line: this runs for every request.
  let format = accessFormatter(settings.logFormat);
  return {
    write: (entry) => log.write(format(entry)),
    reopen(next) {
      format = accessFormatter(next.logFormat);
      return log.reopen(rotationOf(next));
    },
    drain: () => log.drain(),
  };
}

export const accessOfWire = (wire: WireAccessEntry): AccessEntry => ({ ...wire, time: new Date(wire.time) });

/** Only a LogFormat string reads header fields (%{Name}i): the others' entries travel without them. */
const readsHeaders = (logFormat: LogFormat) => logFormat !== 'combined' && logFormat !== 'json';

/** A worker's access log (--proxy-workers > 1): entries go to the primary, which formats and writes them. */
export function relayedAccess(relay: LogRelay<ProxyLogEntries>, settings: LogSettings): AccessSink {
  let format = accessFormatter(settings.logFormat);
  let headers = readsHeaders(settings.logFormat);
  const send = relay.to('access.log', (wire) => format(accessOfWire(wire)));
  return {
    write: (entry) => send({ ...entry, time: entry.time.getTime(), headers: headers ? entry.headers : undefined }),
    reopen(next) {
      format = accessFormatter(next.logFormat);
      headers = readsHeaders(next.logFormat);
      return true; // the primary opens the file again
    },
    drain: () => relay.drain(),
  };
}

export function openAccessLog(sink: AccessSink): AccessLog {
  return {
    record(ctx, bytes) {
      const { req, res, arrivedAt } = ctx;
      sink.write({
        remoteAddress: ctx.clientAddress,
        time: new Date(arrivedAt), // %t is when the request arrived
        method: req.method ?? '-',
        url: ctx.url, // %r is the request as received, before any rewriting
        httpVersion: req.httpVersion,
        // A response cut before its header was sent is logged as Apache does: with the status it was to have.
        status: res.statusCode,
        bytes,
        referer: req.headers.referer,
        userAgent: req.headers['user-agent'],
        requestId: ctx.id,
        // %X: an answer that did not finish, or an HTTP/2 stream the client reset, was aborted; else whether the
        // connection outlives it (HTTP/2's does).
        connectionStatus: answerAborted(res) ? 'X' : res.shouldKeepAlive || req.httpVersionMajor >= 2 ? '+' : '-',
        // Milliseconds, the clock arrivedAt was read with: %D ends in 000.
        durationMicros: (Date.now() - arrivedAt) * 1000,
        headers: req.headers,
      });
    },
    recordRefused(remoteAddress, requestLine, status, bytes) {
      sink.write({
        remoteAddress: clientAddress(remoteAddress),
        time: new Date(),
        method: '-',
        url: '-',
        httpVersion: '-',
        status,
        bytes,
        referer: undefined,
        userAgent: undefined,
        requestLine,
      });
    },
    reopen: (next) => sink.reopen(next),
    drain: () => sink.drain(),
  };
}
