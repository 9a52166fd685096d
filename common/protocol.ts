// What the proxy and the host agree on about a request.

/** Requests under this prefix are forwarded to the host and name a controller. */
export const CONTROLLER_PREFIX = '/External/';

/** An X-Request-Id worth keeping (a front load balancer may set one); anything else is replaced. */
export const WELL_FORMED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The host's stderr for this request (PHP's error lines, URI-encoded): the proxy writes each line to
 * error.log as mod_fcgid relays an application's stderr, and never passes the field to a client.
 */
export const HOST_STDERR_FIELD = 'x-extqs-stderr';

/**
 * The application ended without a response header (as the legacy PHP process did). The host says so on
 * a connection it keeps, with an empty 500; the proxy answers as if the connection had closed (Apache's
 * 500 page, "End of script output before headers"). A host that really dies mid-request still resets.
 */
export const ENDED_WITHOUT_HEADERS_FIELD = 'x-extqs-ended-without-headers';

/** The host's text for HOST_STDERR_FIELD: bounded, and any byte a header value may carry. */
export function encodeStderr(text: string): string {
  return encodeURIComponent(text.length > 4000 ? `${text.slice(0, 4000)}…` : text);
}

/** The lines a HOST_STDERR_FIELD value carries ([] if it is not well-formed). */
export function decodeStderr(value: string | string[] | undefined): string[] {
  if (typeof value !== 'string') return [];
  try {
    return decodeURIComponent(value).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * Under `extqs dev` only: the proxy says the client connected from a loopback address (its socket's, never
 * a field the client sent), so the host may show it a controller's error with its stack. The proxy drops
 * this field from every client request; the host outside `extqs dev` never reads it.
 */
export const LOCAL_CLIENT_FIELD = 'x-extqs-local-client';
