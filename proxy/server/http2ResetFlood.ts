// HTTP/2 rapid reset (CVE-2023-44487): a stream the client resets frees its place under --h2-max-concurrent-streams
// at once, so that bound alone never stops a connection that opens and resets streams without end. As nginx
// counts new streams against twice its concurrent-stream bound, a connection that resets more than twice the
// bound within a second is sent GOAWAY ENHANCE_YOUR_CALM and closed (Node 22 has streamResetBurst and
// streamResetRate for this; Node 20 has nothing, hence the count here).
import { constants, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import type { ErrorLog } from '../observe/errorLog.ts';
import { clientOf } from '../core/clientAddress.ts';

/** The window the resets are counted in. */
const WINDOW_MS = 1_000;

export interface ResetFloodGuard {
  /** Counts the resets of `session`'s streams, and ends the session when they pass the bound. */
  watch(session: Http2Session): void;
  /** Sessions ended for a reset flood since this process started (/metrics). */
  goaways(): number;
  /** Whether `session` was ended here (its session error is this guard's doing, already logged). */
  calmed(session: Http2Session): boolean;
}

/** `maxStreams`: --h2-max-concurrent-streams as it is now (a SIGHUP may change it). */
export function resetFloodGuard(maxStreams: () => number, errorLog: ErrorLog): ResetFloodGuard {
  let goaways = 0;
  const calmed = new WeakSet<Http2Session>();

  function watch(session: Http2Session): void {
    let windowStart = 0;
    let resets = 0;
    session.on('stream', (stream: ServerHttp2Stream) => {
      // 'aborted' comes when a stream closes before its answer ended: reset by the client, or destroyed by this
      // server (a cut), which destroys it first.
      stream.once('aborted', () => {
        if (stream.destroyed || session.destroyed || calmed.has(session)) return;
        const now = performance.now();
        if (now - windowStart > WINDOW_MS) {
          windowStart = now;
          resets = 0;
        }
        const bound = 2 * maxStreams();
        if (++resets <= bound) return;
        goaways += 1;
        calmed.add(session);
        errorLog.write({
          module: 'http2',
          level: 'warn',
          client: session.socket ? clientOf(session.socket) : undefined,
          message: `rapid reset: more than ${bound} streams (2 x --h2-max-concurrent-streams) reset within 1 s, connection closed with GOAWAY ENHANCE_YOUR_CALM`,
        });
        // No new stream is taken from now on; a turn later, once the GOAWAY is written, the streams still open
        // close with the session, their host calls aborted.
        session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
        process.nextTick(() => session.destroy(new Error('rapid reset'), constants.NGHTTP2_ENHANCE_YOUR_CALM));
      });
    });
  }

  return { watch, goaways: () => goaways, calmed: (session) => calmed.has(session) };
}
