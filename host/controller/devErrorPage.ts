// `extqs dev` only: a controller that throws, or cannot be loaded, shows a loopback client its error, stack
// and source lines (PHP's display_errors for the developer's browser), where every other client gets the
// usual 500. The proxy alone decides who is on loopback, from the client's socket (LOCAL_CLIENT_FIELD, read by
// proxyFields.ts); this worker is reached only through it (a private socket under the launcher).
import type { FastifyInstance } from 'fastify';
import { CONTROLLER_ANSWER_FIELD, CONTROLLER_FAILED_FIELD, ENDED_WITHOUT_HEADERS_FIELD } from '../../common/protocol.ts';
import { frameFor } from '../../common/terminal.ts';
import { typeErrorsIn, typeErrorText, type TypeError } from '../../common/typeErrors.ts';
import { failureOf } from './controllerCall.ts';
import { ControllerFault } from './errors.ts';
import { fromLocalClient } from './proxyFields.ts';

const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

export interface DevErrorPageInput {
  /** What happened: `Uncaught exception in controller Boom`, `Controller Boom could not be loaded`. */
  title: string;
  requestId: string;
  /** The error's stack mapped to the controller's source (or the thrown value as text). */
  detail: string;
  /** The source lines around the failing one ('' when unknown). */
  frame: string;
  /** The type errors in the controller's files as the last check found them. */
  typeErrors: readonly TypeError[];
}

/** Each type error with its source lines, under a heading; '' when there is none. */
function typeErrorSection(errors: readonly TypeError[]): string {
  if (errors.length === 0) return '';
  const items = errors.map((error) => `<pre class="type-error">${escapeHtml(`${typeErrorText(error)}\n${error.frame}`)}</pre>`);
  return `<h2>${errors.length} type error${errors.length === 1 ? '' : 's'} in its files</h2>\n${items.join('\n')}`;
}

/** The page: every value escaped, so an error message holding markup is shown, never run. */
export function devErrorPage({ title, requestId, detail, frame, typeErrors }: DevErrorPageInput): string {
  const [first, ...rest] = detail.split('\n');
  return [
    '<!DOCTYPE html>',
    `<html lang="en"><head><meta charset="utf-8"><title>500 ${escapeHtml(title)}</title>`,
    '<style>body{font:14px/1.4 system-ui,sans-serif;margin:2em}pre{background:#f6f6f6;padding:1em;overflow:auto}h1{color:#b00020;font-size:1.3em}</style>',
    '</head><body>',
    `<h1>${escapeHtml(title)}</h1>`,
    `<p><strong>${escapeHtml(first)}</strong></p>`,
    frame ? `<pre class="frame">${escapeHtml(frame)}</pre>` : '',
    `<pre class="stack">${escapeHtml(rest.join('\n'))}</pre>`,
    typeErrorSection(typeErrors),
    `<p>Request id ${escapeHtml(requestId)}. Shown by <code>extqs dev</code> to clients on this machine only; other clients get the server's 500 page.</p>`,
    '</body></html>',
    '',
  ].join('\n');
}

/**
 * Replaces the empty 500 of a controller's uncaught error, or of one that could not be loaded, with the page,
 * for a client the proxy marked local.
 */
export function showErrorsToLocalClients(app: FastifyInstance, controllersDir: string, typeErrorsFile: string | undefined): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode !== 500 || !fromLocalClient(request.raw)) return payload;
    const failure = failureOf(request.raw);
    if (!failure) return payload;
    const { call, stage } = failure;
    // A failure in one of its callbacks ended the call (controllerFaults.ts): the page shows that failure.
    const error = failure.error instanceof ControllerFault ? failure.error.cause : failure.error;
    // A load failure's message holds its stack, mapped already; a thrown error is mapped here.
    const detail =
      stage === 'run' && error instanceof Error ? call.mapStack(error.stack ?? error.message) : ((error as Error).message ?? String(error));
    const kind = failure.error instanceof ControllerFault ? failure.error.kind : 'Uncaught exception';
    const title = stage === 'run' ? `${kind} in controller ${call.controller}` : `Controller ${call.controller} could not be loaded`;
    // The page is this answer, relayed by the proxy, not the failure it would answer with Apache's page; the
    // host's stderr field stays, so error.log still gets PHP's fatal error line.
    reply
      .removeHeader(CONTROLLER_FAILED_FIELD)
      .removeHeader(ENDED_WITHOUT_HEADERS_FIELD)
      .header(CONTROLLER_ANSWER_FIELD, '1')
      .type('text/html; charset=utf-8');
    const typeErrors = typeErrorsFile === undefined ? [] : typeErrorsIn(typeErrorsFile, call.files);
    return devErrorPage({ title, requestId: call.requestId, detail, frame: frameFor(detail, controllersDir, false), typeErrors });
  });
}
