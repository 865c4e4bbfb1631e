/**
 * Neon's storage-controller leadership endpoints (ha:L5):
 *
 *   GET /control/v1/leader      the current leader: {"address", "epoch", "lease_expires_at"}, 404 when none
 *   PUT /control/v1/step_down   the leader halts its runs, releases its lease and stands by → 200;
 *                               412 on a stand-by (or on SQLite, where one gateway leads alone)
 *
 * GET needs viewer, PUT admin (as the `stepDown` mutation); the PUT is audited.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../cluster/clock.ts';
import type { Leadership } from '../leadership/leadership.ts';
import { audited } from '../operations/core/audited.ts';
import type { Scope } from '../auth/scopes.ts';
import type { AuditLog } from '../store/audit-log.ts';
import { HttpError, sendJson } from './http-io.ts';

const LEADER_PATH = '/control/v1/leader';
const STEP_DOWN_PATH = '/control/v1/step_down';

interface LeaderEndpointDeps {
  leadership: Leadership;
  audit: AuditLog;
  clock: Clock;
  authorize?: (req: IncomingMessage, needed: Scope, changesState: boolean) => Promise<{ actor: string }>;
}

export function createLeaderEndpoints(deps: LeaderEndpointDeps): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  return async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== LEADER_PATH && path !== STEP_DOWN_PATH) return false;
    try {
      const method = path === LEADER_PATH ? 'GET' : 'PUT';
      if (req.method !== method) throw new HttpError(405, `method ${req.method} not allowed on ${path}`, { allow: method });
      const actor = (await deps.authorize?.(req, method === 'GET' ? 'viewer' : 'admin', method === 'PUT'))?.actor ?? 'rest';
      if (method === 'GET') {
        const leader = await deps.leadership.leader();
        if (!leader) throw new HttpError(404, 'no replica leads now (a stand-by takes over when the lease expires; one gateway on SQLite has none)');
        sendJson(res, 200, { address: leader.address, epoch: leader.epoch, lease_expires_at: leader.expiresAt.toISOString() });
        return true;
      }
      const stepped = await audited(deps, { action: `PUT ${STEP_DOWN_PATH}`, arguments: {}, nodeId: null, meta: { actor, reason: null } }, async () => {
        const { role, epoch } = deps.leadership.status();
        if (role !== 'leader' || epoch === null) throw new HttpError(412, 'this replica is not the leader (GET /control/v1/leader says which is)');
        await deps.leadership.stepDown(`PUT ${STEP_DOWN_PATH} by ${actor}`);
        return { epoch };
      });
      sendJson(res, 200, { stepped_down: true, epoch: stepped.epoch });
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      sendJson(res, e.status, { msg: e.message }, e.headers);
    }
    return true;
  };
}
