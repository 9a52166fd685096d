// The controller contract (docs/design.md §7), exported as the package `extqs` so controllers can write
// `import type { Controller } from 'extqs'`. Types only: the host strips this import on load.

/** A query value as PHP's $_GET holds it: a string, or a nested array for `a[]=` / `a[k]=` names. */
export type QueryValue = string | QueryValue[] | { [key: string]: QueryValue };

/** PHP's UPLOAD_ERR_* codes: 0 OK, 1 INI_SIZE (over --upload-max-filesize), 2 FORM_SIZE (over the form's
 *  MAX_FILE_SIZE field), 3 PARTIAL (the body ended inside the file), 4 NO_FILE (no file chosen). */
export type UploadError = 0 | 1 | 2 | 3 | 4 | 6 | 7 | 8;

/** One upload, as PHP's $_FILES entry (camel-cased). */
export interface UploadedFile {
  /** The file name the client gave, without any directory part. */
  readonly name: string;
  /** The file name as the client sent it (a directory upload's relative path). */
  readonly fullPath: string;
  /** The part's Content-Type without parameters, '' when it had none. */
  readonly type: string;
  /** Where the upload is on disk, '' on error; deleted when the request ends. */
  readonly tmpName: string;
  readonly error: UploadError;
  readonly size: number;
}

/** A field's uploads named `f[]` or `f[k]`: PHP's layout, each property an array or object of the same shape. */
export type FileTree<T> = T | FileTree<T>[] | { [key: string]: FileTree<T> };
export interface UploadedFiles {
  readonly name: FileTree<string>;
  readonly fullPath: FileTree<string>;
  readonly type: FileTree<string>;
  readonly tmpName: FileTree<string>;
  readonly error: FileTree<UploadError>;
  readonly size: FileTree<number>;
}

/**
 * The request body as sent (PHP's php://input), read only when asked: one of stream(), text(), json() or
 * arrayBuffer() reads a streamed body, once. Empty for multipart/form-data, as in PHP.
 */
export interface RequestBody {
  stream(): ReadableStream<Uint8Array>;
  text(): Promise<string>;
  json(): Promise<unknown>;
  arrayBuffer(): Promise<ArrayBuffer>;
}

export interface ControllerContext {
  /** The query string parsed as PHP's $_GET (flags without `=` are '', the last duplicate wins). */
  readonly query: Readonly<Record<string, QueryValue>>;
  /**
   * `query` with PHP's bytes kept: each name and value one character a byte (latin1), so `?y=%E9` gives `'\xe9'`
   * where `query.y` is `'\ufffd'` (a byte that is not UTF-8 is replaced there). `Buffer.from(queryBytes.y, 'latin1')`
   * is exactly what PHP's `$_GET['y']` held.
   */
  readonly queryBytes: Readonly<Record<string, QueryValue>>;
  /** A urlencoded or multipart form body parsed as PHP's $_POST (the query's rules). */
  readonly post: Readonly<Record<string, QueryValue>>;
  /** A multipart body's uploads as PHP's $_FILES, on disk until the request ends. */
  readonly files: Readonly<Record<string, UploadedFile | UploadedFiles>>;
  /** The Cookie header parsed as PHP's $_COOKIE (the first of a duplicate name wins). */
  readonly cookies: Readonly<Record<string, QueryValue>>;
  readonly body: RequestBody;
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
