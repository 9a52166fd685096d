// Self-signed certificates for the HTTPS tests and the bench, made with openssl (Debian's
// package, as an operator would make one) for localhost and 127.0.0.1, valid for a day.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export interface CertificateFiles {
  cert: string;
  key: string;
}

/** A fresh key and its self-signed certificate in `dir`, as `<name>.crt` and `<name>.key`. */
export function makeCertificate(dir: string, name = 'localhost', subject = '/CN=localhost'): CertificateFiles {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      subject,
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return { cert, key };
}
