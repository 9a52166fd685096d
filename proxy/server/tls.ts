// The HTTPS listener's TLS settings: Mozilla's "intermediate" configuration (TLS 1.2 and 1.3, forward
// secrecy, AEAD ciphers only, the client's cipher preference), no TLS compression, no renegotiation; and
// reading the certificate and key files, at start and again on SIGHUP (certbot renews them in place).
import { constants } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { SecureServerOptions } from 'node:http2';
import type { SecureContextOptions } from 'node:tls';
import type { ProxyConfig } from '../../common/settings.ts';

/** https://ssl-config.mozilla.org/ intermediate (version 5.7): its TLS 1.3 suites, then its TLS 1.2 ones. */
const INTERMEDIATE_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
  'DHE-RSA-AES128-GCM-SHA256',
  'DHE-RSA-AES256-GCM-SHA384',
  'DHE-RSA-CHACHA20-POLY1305',
].join(':');

export const TLS_DEFAULTS: SecureServerOptions = {
  minVersion: 'TLSv1.2',
  ciphers: INTERMEDIATE_CIPHERS,
  ecdhCurve: 'X25519:prime256v1:secp384r1',
  // ffdhe2048 (RFC 7919) for the DHE suites, as Mozilla's configuration asks.
  dhparam: 'auto',
  honorCipherOrder: false,
  // OpenSSL 3 has no TLS compression built in (CRIME); the flag says so for any other build. Client
  // renegotiation is refused outright rather than rate-limited (Node allows 3 in 10 minutes by default).
  secureOptions: constants.SSL_OP_NO_COMPRESSION | constants.SSL_OP_NO_RENEGOTIATION,
};

/** The HTTPS listener's certificate chain and key (read from their files now), and whether plain HTTP is sent there. */
export interface TlsOptions {
  pair: Pick<SecureContextOptions, 'cert' | 'key'>;
  /** --tls-redirect: plain HTTP requests are answered 301 to the same URL on HTTPS. */
  redirect: boolean;
}

export function tlsOptionsOf(config: Pick<ProxyConfig, 'tlsCert' | 'tlsKey' | 'tlsRedirect'>): TlsOptions {
  return { pair: { cert: readFileSync(config.tlsCert!), key: readFileSync(config.tlsKey!) }, redirect: config.tlsRedirect === 'on' };
}
