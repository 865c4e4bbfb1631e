import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * A throw-away self-signed certificate made with openssl (one day, RSA 2048), written to
 * `dir/keyFile` and `dir/certFile`: for the tests that need TLS on loopback (the admission
 * webhook, the Kubernetes simulator kubectl talks to).
 */
export function makeSelfSignedCert(dir: string, o: { commonName: string; subjectAltName: string; keyFile: string; certFile: string }): void {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${o.commonName}`,
      '-addext',
      `subjectAltName=${o.subjectAltName}`,
      '-keyout',
      join(dir, o.keyFile),
      '-out',
      join(dir, o.certFile),
    ],
    { stdio: 'ignore' },
  );
}
