// Who may talk to a host listener on TCP (docs/design.md §12): php-fpm's listen.allowed_clients
// (--host-allow) and mutual TLS (--mtls-ca, --mtls-cert, --mtls-key), as a service mesh or nginx's
// proxy_ssl_certificate give. One function makes any host-side listener: the primary's today, a
// worker's own socket tomorrow. A unix socket is guarded by its file mode (0600 in a 0700 directory).
import { readFileSync } from 'node:fs';
import { createServer as createPlainServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { BlockList, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { allowList, allowed } from '../../common/clientList.ts';
import { formatAllowList } from '../../common/settingParsers.ts';
import type { HostConfig } from '../../common/settings.ts';

export type AdmissionSettings = Pick<HostConfig, 'socket' | 'hostAllow' | 'mtlsCa' | 'mtlsCert' | 'mtlsKey'>;

/** What a TCP listener checks of each client; empty for a unix socket. */
export interface Admission {
  /** Only these addresses are served; undefined: any. */
  readonly allow?: BlockList;
  /** The files of mutual TLS; undefined: plain HTTP. */
  readonly tls?: { readonly ca: string; readonly cert: string; readonly key: string };
}

export function admissionOf(settings: AdmissionSettings): Admission {
  if (settings.socket !== undefined) return {};
  const { mtlsCa: ca, mtlsCert: cert, mtlsKey: key } = settings;
  return {
    allow: settings.hostAllow.length > 0 ? allowList(settings.hostAllow) : undefined,
    tls: ca !== undefined && cert !== undefined && key !== undefined ? { ca, cert, key } : undefined,
  };
}

/** What `extqs check` and the docs say is in force, in one line. */
export function describeAdmission(settings: AdmissionSettings): string {
  if (settings.socket !== undefined) return 'a unix socket: the clients its file mode lets in';
  const rules = [
    settings.hostAllow.length > 0 && `clients in --host-allow ${formatAllowList(settings.hostAllow)}`,
    settings.mtlsCert !== undefined && `mutual TLS (a client certificate from ${settings.mtlsCa})`,
  ].filter((rule) => rule !== false);
  return rules.length > 0 ? rules.join(' with ') : 'any client that reaches the port (loopback)';
}

/**
 * An HTTP server, or an HTTPS one that demands a client certificate from the CA, whose connections from
 * outside the allow list are closed before a byte is read; each refusal is one `refused` line.
 */
export function admittingServer(
  admission: Admission,
  options: ServerOptions,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  refused: (message: string) => void,
): Server {
  const server: Server = admission.tls
    ? createTlsServer(
        {
          ...options,
          ca: readFileSync(admission.tls.ca),
          cert: readFileSync(admission.tls.cert),
          key: readFileSync(admission.tls.key),
          requestCert: true,
          // Verified below instead: Node's own refusal of a certificate from another CA closes the
          // connection without an event, so nothing could log it.
          rejectUnauthorized: false,
        },
        handler,
      )
    : createPlainServer(options, handler);
  const { allow } = admission;
  if (allow) {
    // prependListener: before https's own listener starts the handshake on it.
    server.prependListener('connection', (socket: Socket) => {
      if (allowed(allow, socket.remoteAddress)) return;
      refused(`Refused a connection from ${socket.remoteAddress}: not in --host-allow`);
      socket.destroy();
    });
  }
  if (admission.tls) {
    // Before the HTTP parser is attached: a client whose certificate did not verify sends nothing it reads.
    server.prependListener('secureConnection', (socket: TLSSocket) => {
      if (socket.authorized) return;
      refused(`Refused a TLS client ${socket.remoteAddress ?? '(gone)'}: ${String(socket.authorizationError)}`);
      socket.destroy();
    });
    server.on('tlsClientError', (err: Error & { reason?: string }, socket: TLSSocket) => {
      // A socket refused by the allow list ends its handshake too: it was said once already.
      if (allow && !allowed(allow, socket.remoteAddress)) return;
      refused(`Refused a TLS client ${socket.remoteAddress ?? '(gone)'}: ${err.reason ?? err.message.trim()}`);
      socket.destroy();
    });
  }
  return server;
}
