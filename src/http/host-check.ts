import { isLoopbackHost } from '../auth/service.ts';
import { sendJson } from '../rest/http-io.ts';
import type { Guard } from './router.ts';

export const LOOPBACK_ONLY = 'without authentication only loopback names are served';

/**
 * Whether a request's Host header is refused. Without authentication only loopback names
 * are served: a DNS-rebinding page cannot reach us.
 */
export type HostCheck = (host: string | undefined) => boolean;

export function createHostCheck(auth: { readonly enforced: boolean }, insecure: boolean): HostCheck {
  return (host) => {
    if (auth.enforced || insecure || !host) return false;
    const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '');
    return !isLoopbackHost(name);
  };
}

export function hostGuard(refuses: HostCheck): Guard {
  return (req, res) => {
    if (!refuses(req.headers.host)) return false;
    sendJson(res, 403, { msg: `Host ${String(req.headers.host).slice(0, 100)} refused: ${LOOPBACK_ONLY}` });
    return true;
  };
}
