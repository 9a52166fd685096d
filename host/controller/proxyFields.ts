// The fields a proxy adds for the host alone (common/protocol.ts: the start-by time, `extqs dev`'s local client):
// read once and taken out of the request's headers, so a controller sees the client's fields and the proxy's HTTP
// ones (X-Forwarded-*, X-Request-Id), never the proxy's signalling, as a PHP script sees a FastCGI request's HTTP_*
// params and not the server's own. The proxy drops a client's copy of each (NEVER_FORWARDED, proxy/forward/forwarding.ts).
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { LOCAL_CLIENT_FIELD, START_BY_FIELD } from '../../common/protocol.ts';

export interface ProxyFields {
  /** START_BY_FIELD's time, or undefined when the request came without one (through the primary's relay). */
  startBy: number | undefined;
}

/** Requests `extqs dev`'s proxy marked as from a loopback client (read by host/controller/devErrorPage.ts). */
const localClients = new WeakSet<IncomingMessage>();

/** Takes the proxy's fields out of `raw`'s headers (once: a second call finds none) and returns what they said. */
export function takeProxyFields(raw: IncomingMessage): ProxyFields {
  const headers: IncomingHttpHeaders = raw.headers;
  const startBy = headers[START_BY_FIELD];
  if (startBy !== undefined) delete headers[START_BY_FIELD];
  if (headers[LOCAL_CLIENT_FIELD] !== undefined) {
    if (headers[LOCAL_CLIENT_FIELD] === '1') localClients.add(raw);
    delete headers[LOCAL_CLIENT_FIELD];
  }
  return { startBy: startBy === undefined ? undefined : Number(startBy) };
}

/** The proxy said this request's client is on loopback (only `extqs dev`'s proxy says so). */
export function fromLocalClient(raw: IncomingMessage): boolean {
  return localClients.has(raw);
}
