// Pass 2, with --tls-redirect: a plain-HTTP request is sent to the same target on HTTPS (nginx
// `return 301 https://$host$request_uri`). ACME's HTTP-01 challenges stay on plain HTTP, as certbot's own
// nginx and Apache configurations leave them.
import { isIP } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { authorityOf, isHttp2 } from '../core/protocols.ts';
import type { Pass } from '../core/requestContext.ts';

const ACME_CHALLENGE = '/.well-known/acme-challenge/';

/** A Host field's host name or address, without its port. */
const HOST_NAME = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

export interface HttpsRedirect {
  /** Read for every request: a SIGHUP may turn it on or off. */
  enabled(): boolean;
  /** The HTTPS listener's port; undefined before it is bound. */
  tlsPort(): number | undefined;
}

export function httpsRedirectPass(redirect: HttpsRedirect): Pass {
  return (ctx) => {
    const { req } = ctx;
    if (!redirect.enabled() || isHttp2(req) || (req.socket as TLSSocket).encrypted || req.url?.startsWith(ACME_CHALLENGE)) return false;
    // A plain request can come before the HTTPS listener is bound (start-up): nowhere to send it yet.
    const tlsPort = redirect.tlsPort();
    if (tlsPort === undefined) {
      ctx.sendErrorPage(503);
      return true;
    }
    // A Host that is no host name or address is not echoed into Location: the address the client reached is used instead.
    const named = authorityOf(req)?.match(HOST_NAME)?.[1];
    const local = req.socket.localAddress ?? '';
    const host = named ?? (isIP(local) === 6 ? `[${local}]` : local);
    ctx.log('rewrite', 'debug', `redirect to HTTPS: ${req.url ?? ''}`);
    ctx.sendErrorPage(301, { Location: `https://${host}${tlsPort === 443 ? '' : `:${tlsPort}`}${req.url ?? '/'}` });
    return true;
  };
}
