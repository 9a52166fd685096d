// What the proxy and the host agree on about a request.

/** Requests under this prefix are forwarded to the host and name a controller. */
export const CONTROLLER_PREFIX = '/External/';

/** An X-Request-Id worth keeping (a front load balancer may set one); anything else is replaced. */
export const WELL_FORMED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The host's stderr for this request (PHP's error lines, URI-encoded): the proxy writes each line to
 * error.log as mod_fcgid relays an application's stderr, and never passes the field to a client. A body
 * that fails after its head went out sends it as a trailer (host/controller/respond.ts); the proxy then cuts the client.
 */
export const HOST_STDERR_FIELD = 'x-extqs-stderr';

/**
 * The application ended without a response header (as the legacy PHP process did). The host says so on
 * a connection it keeps, with an empty 500; the proxy answers as if the connection had closed (Apache's
 * 500 page, "End of script output before headers"). A host that really dies mid-request still resets.
 */
export const ENDED_WITHOUT_HEADERS_FIELD = 'x-extqs-ended-without-headers';

/**
 * On the host's empty 503 for a request that found every worker busy and the listen queue full
 * (--listen-backlog): the proxy answers Apache's 503 page and mod_fcgid's line for no free process slot.
 */
export const POOL_FULL_FIELD = 'x-extqs-pool-full';

/**
 * On a host answer of status 400 or more: a controller made it (its Response). Any other such answer is
 * the host's own (fastify refusing a request, a handler failing) and the proxy answers Apache's page
 * instead (P6); it never passes the field to a client.
 */
export const CONTROLLER_ANSWER_FIELD = 'x-extqs-controller-answer';

/**
 * On a request a proxy sends straight to a host worker: the time (ms since the epoch, on their one machine's clock)
 * past which the worker must not start it. A request sent away from a blocked worker then never starts there
 * afterwards: the proxy sends it elsewhere only once that time has passed with the request not shown running.
 */
export const START_BY_FIELD = 'x-extqs-start-by';

/** On a worker's 503 for a request past its START_BY_FIELD: nothing of it ran, and the proxy sends it elsewhere. */
export const NOT_STARTED_FIELD = 'x-extqs-not-started';

/**
 * On the host's empty 500 for a controller that threw (its fatal error in the stderr field): the proxy
 * answers Apache's 500 page, as for a controller that could not be loaded, with the stderr line only.
 */
export const CONTROLLER_FAILED_FIELD = 'x-extqs-controller-failed';

/**
 * The most bytes of fields (`name: value` and CRLF each) a controller's Response may carry. The proxy's
 * engines read a host's head up to Node's 16 KiB; this leaves room for the host's own fields (Date,
 * framing, its signals), so a big head is the controller's failure with a line naming it, not a reset the
 * proxy cannot explain. 8 KiB is Apache's per-line limit on a script's header (HUGE_STRING_LEN).
 */
export const CONTROLLER_HEAD_MAX = 8_192;

/** The most --max-header-size allows. */
export const MAX_HEADER_SIZE_CEILING = 1_048_576;

/**
 * The host's limit on a request head (Node's maxHeaderSize), so that it accepts whatever a proxy lets
 * through at the largest --max-header-size: the head as counted there, the authority again as
 * X-Forwarded-Host, and the fields the proxy adds or its engine frames (X-Forwarded-For, -Proto,
 * X-Request-Id, Connection, Transfer-Encoding: under 400 bytes). Only proxies reach the host.
 */
export const HOST_MAX_HEADER_SIZE = 2 * MAX_HEADER_SIZE_CEILING + 1_024;

/** Apache's status for a request Node's HTTP/1.1 parser refused (its error code), in the proxy and the host alike. */
export function statusOfParserError(code: string | undefined): number {
  return code === 'HPE_HEADER_OVERFLOW' ? 431 : code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
}

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

/**
 * The host primary's table of its workers, for a proxy on the same machine: `GET /workers` answers one JSON
 * line of it at once and another whenever it changes, for as long as the proxy keeps the request open. The
 * proxy sends a controller request straight to a worker of it (the least busy among those not blocked), and
 * through the primary when there is none, as with `concurrency` > 0, where the primary alone routes so that no
 * worker ever runs more than that many (docs/design.md §4.2). Only a primary on a unix socket lists its
 * workers: their private sockets are on its machine.
 */
export const WORKERS_PATH = '/workers';

export interface WorkerTable {
  /** --worker-concurrency: the most requests one worker runs at once; 0 = unlimited. */
  concurrency: number;
  workers: WorkerRoute[];
  /**
   * The pids of the last workers that exited unasked (a crash, a controller's process.exit): what a proxy had in
   * flight there died with them and may go again. A worker that retires is not one of them.
   */
  exited: number[];
  /**
   * Of those, the ones whose death has a known cause: the pid's request id, the request whose controller ended it
   * (a controller's process.kill() or process.abort(), the execution-limit kill). That request is never sent again.
   */
  culprits?: Record<string, string>;
}

export interface WorkerRoute {
  pid: number;
  /** Its private socket. */
  socket: string;
  /** Its event loop has not turned for a while (a controller in a synchronous loop): send it nothing new. */
  blocked: boolean;
  /**
   * While blocked, the request ids of the calls it was running: any other request sent to it has not started
   * there, and a proxy may send it elsewhere.
   */
  running: string[];
}
