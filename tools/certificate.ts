// Self-signed certificates for the HTTPS tests and the bench, made with openssl (Debian's
// package, as an operator would make one) for localhost and 127.0.0.1, valid for a day.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
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

/** A certificate authority of its own in `dir` (`<name>.crt`, `<name>.key`), for the mutual-TLS tests. */
export function makeAuthority(dir: string, name: string): CertificateFiles {
  return makeCertificate(dir, name, `/CN=${name}`);
}

/**
 * A key and a certificate for `subjectAltName` (e.g. `IP:127.0.0.2`), signed by `authority`, valid for a day,
 * usable by a TLS server and client alike.
 */
export function signedCertificate(dir: string, name: string, authority: CertificateFiles, subjectAltName: string): CertificateFiles {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const request = join(dir, `${name}.csr`);
  const extensions = join(dir, `${name}.ext`);
  writeFileSync(extensions, `subjectAltName=${subjectAltName}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  const quiet: { stdio: ['ignore', 'ignore', 'pipe'] } = { stdio: ['ignore', 'ignore', 'pipe'] };
  execFileSync(
    'openssl',
    [
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      key,
      '-out',
      request,
    ],
    quiet,
  );
  execFileSync(
    'openssl',
    [
      'x509',
      '-req',
      '-in',
      request,
      '-CA',
      authority.cert,
      '-CAkey',
      authority.key,
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      extensions,
      '-out',
      cert,
    ],
    quiet,
  );
  return { cert, key };
}
