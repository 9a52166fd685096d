// The pages a request is refused with: the operator's (--error-document), else Apache httpd's built-in
// error documents (modules/http/http_protocol.c, get_canned_error_string), without the server signature
// and without echoing the URL back.
import type { ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { ErrorDocument } from '../../common/settingParsers.ts';
import { isHttp2 } from './protocols.ts';

const explanations: Record<number, string> = {
  400: '<p>Your browser sent a request that this server could not understand.<br />\n</p>',
  403: "<p>You don't have permission to access this resource.</p>",
  404: '<p>The requested URL was not found on this server.</p>',
  405: '<p>The requested method is not allowed for this URL.</p>',
  413: '<p>The requested resource does not allow request data with the requested method, or the amount of data provided in\nthe request exceeds the capacity limit.<br />\n</p>',
  414: "<p>The requested URL's length exceeds the capacity\nlimit for this server.<br />\n</p>",
  500:
    '<p>The server encountered an internal error or\nmisconfiguration and was unable to complete\nyour request.</p>\n' +
    '<p>Please contact the server administrator to inform them of the time this error occurred,\n' +
    ' and the actions you performed just before this error.</p>\n' +
    '<p>More information about this error may be available\nin the server error log.</p>',
  503: '<p>The server is temporarily unable to service your\nrequest due to maintenance downtime or capacity\nproblems. Please try again later.</p>',
  504: '<p>The gateway did not receive a timely response\nfrom the upstream server or application.</p>',
};

/** Where Apache's reason phrase (http_protocol.c status_lines) differs from Node's. */
const APACHE_REASONS: Record<number, string> = { 413: 'Request Entity Too Large' };

export const reasonOf = (status: number): string => APACHE_REASONS[status] ?? STATUS_CODES[status] ?? 'Error';

/** Apache's pages, each built once (they never change: a cache, not a setting). */
const pages = new Map<number, Buffer>();

/** Apache's page for `status`, built once. */
export function errorPage(status: number): Buffer {
  let page = pages.get(status);
  if (!page) {
    const reason = reasonOf(status);
    page = Buffer.from(
      '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n' +
        `<title>${status} ${reason}</title>\n</head><body>\n<h1>${reason}</h1>\n` +
        `${explanations[status] ?? ''}\n</body></html>\n`,
    );
    pages.set(status, page);
  }
  return page;
}

type OwnPage = { body: Buffer; contentType: string };

const ownPagesOf = (documents: readonly ErrorDocument[]) =>
  new Map<number, OwnPage>(documents.map(({ status, body, contentType }) => [status, { body: Buffer.from(body, 'base64'), contentType }]));

/**
 * The operator's pages by status, made by the process's role from the settings and handed to each request's
 * context (requestContext.ts); a SIGHUP replaces them as a whole, for the answers after it.
 */
export class ErrorPages {
  private own: Map<number, OwnPage>;

  constructor(documents: readonly ErrorDocument[] = []) {
    this.own = ownPagesOf(documents);
  }

  replace(documents: readonly ErrorDocument[]): void {
    this.own = ownPagesOf(documents);
  }

  /** Answers with the operator's page for `status`, else Apache's; a response already under way is cut instead. */
  send(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const own = this.own.get(status);
    const page = own?.body ?? errorPage(status);
    const head = res.req.method === 'HEAD';
    // A HEAD answer carries no body length for a body that does not follow, as Apache's error pages
    // (RFC 9110 §8.6 lets a server leave it out; a cache would otherwise take it for the GET's).
    const fields: Record<string, string> = { ...headers, 'Content-Type': own?.contentType ?? 'text/html; charset=iso-8859-1' };
    if (!head) fields['Content-Length'] = String(page.length);
    // HTTP/2 has no reason phrase (RFC 9113 §8.3.2); Node warns when given one.
    if (isHttp2(res.req)) res.writeHead(status, fields);
    else res.writeHead(status, reasonOf(status), fields);
    res.end(head ? undefined : page);
  }
}
