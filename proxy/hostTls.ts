// The proxy's side of mutual TLS with its hosts (docs/design.md §12): the CA that signed the hosts'
// certificates, and this proxy's own certificate and key, read once at start. Every connection the proxy
// makes to an `https://` upstream takes its options from here (both engines, /status, the readiness probe),
// so none forgets to verify the host.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { Upstream } from '../common/settingParsers.ts';
import type { ProxyConfig } from '../common/settings.ts';

let clientTls: ConnectionOptions | undefined;

/** Reads the files of --mtls-ca, --mtls-cert and --mtls-key; a proxy without them has only plain upstreams. */
export function useHostTls(settings: Pick<ProxyConfig, 'mtlsCa' | 'mtlsCert' | 'mtlsKey'>): void {
  const { mtlsCa: ca, mtlsCert: cert, mtlsKey: key } = settings;
  clientTls =
    ca !== undefined && cert !== undefined && key !== undefined
      ? // rejectUnauthorized and the name check are Node's defaults; said here so no caller can lose them.
        { ca: readFileSync(ca), cert: readFileSync(cert), key: readFileSync(key), rejectUnauthorized: true }
      : undefined;
}

/** The TLS options of a connection to this upstream, or undefined for a plain one. */
export function hostTlsFor(upstream: Upstream): ConnectionOptions | undefined {
  if (upstream.kind !== 'tcp' || !upstream.tls) return undefined;
  // The settings refuse an https:// upstream without the three files (common/settings.ts).
  if (!clientTls) throw new Error(`${upstream.host}: an https:// upstream without --mtls-cert, --mtls-key and --mtls-ca`);
  return clientTls;
}
