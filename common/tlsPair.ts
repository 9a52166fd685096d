// Whether a certificate file and a key file make a pair a TLS server can use: checked when the settings
// are read (start-up, `extqs check`, SIGHUP), so a bad pair is refused with the setting's name.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** Why the pair cannot serve, or undefined when it can. */
export function tlsPairProblem(certFile: string, keyFile: string): string | undefined {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(readFileSync(certFile));
  } catch (err) {
    return `${certFile} holds no certificate: ${(err as Error).message}`;
  }
  try {
    const key = createPrivateKey(readFileSync(keyFile));
    if (!certificate.checkPrivateKey(key)) return `${keyFile} is not the key of the certificate in ${certFile}`;
  } catch (err) {
    return `${keyFile} holds no usable private key: ${(err as Error).message}`;
  }
  return undefined;
}
