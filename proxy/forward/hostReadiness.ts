// Whether a host has a worker able to take a request: its primary's /ready (host/pool/poolServer.ts), asked over the
// same connection kind and TLS as a forwarded request (its HostTarget, common/hostTarget.ts).
import type { ClientRequest } from 'node:http';
import type { UpstreamState } from './upstreams.ts';

/** A prober waits a few seconds; a host that cannot say within this long is not ready. */
const HOST_READY_TIMEOUT_MS = 1_000;

/** Undefined when the host is ready, else why not. */
export function hostNotReady({ target }: UpstreamState): Promise<string | undefined> {
  return new Promise((resolve) => {
    let req: ClientRequest;
    try {
      req = target.request({ path: '/ready', agent: false, timeout: HOST_READY_TIMEOUT_MS }, (res) => {
        res.resume();
        resolve(res.statusCode === 200 ? undefined : `its /ready answered ${res.statusCode}`);
      });
    } catch (err) {
      // A host that cannot even be asked (no mutual TLS pair for it) is not ready: a reason, never a throw.
      return resolve((err as Error).message);
    }
    req.on('timeout', () => req.destroy(new Error(`no answer within ${HOST_READY_TIMEOUT_MS} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}
