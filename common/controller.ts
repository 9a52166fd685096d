// The controller contract (docs/design.md §5), exported as the package `extqs` so controllers can write
// `import type { Controller } from 'extqs'`. Types only: the host strips this import on load.

/** A query value as PHP's $_GET holds it: a string, or a nested array for `a[]=` / `a[k]=` names. */
export type QueryValue = string | QueryValue[] | { [key: string]: QueryValue };

export interface ControllerContext {
  /** The query string parsed as PHP's $_GET (flags without `=` are '', the last duplicate wins). */
  readonly query: Readonly<Record<string, QueryValue>>;
  /** The query string as sent, without the leading `?`. */
  readonly rawQuery: string;
  readonly method: string;
  /** The request path, e.g. `/External/Latest`. */
  readonly path: string;
  /** What follows the controller's name in the path, decoded (PHP's PATH_INFO): `/x/y` for
   *  `/External/Latest/x/y`, `/` for `/External/Latest/`, '' for `/External/Latest`. */
  readonly pathInfo: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The id the proxy gave this request (X-Request-Id); it appears in every log line about it. */
  readonly requestId: string;
  /** Aborted when the client goes away before the answer: pass it to fetch() and other long work. */
  readonly signal: AbortSignal;
}

/**
 * What a controller returns: an object or array (sent as JSON), a string (sent as text/html, as PHP
 * echoes), or a web-standard `Response` for full control of status, headers and body.
 */
export type ControllerResult = object | string | Response;

export type Controller = (context: ControllerContext) => ControllerResult | Promise<ControllerResult>;
