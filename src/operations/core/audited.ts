import type { Clock } from '../../cluster/clock.ts';
import { LockkeeperError } from '../../domain/errors.ts';
import type { AuditLog } from '../../store/audit-log.ts';
import type { RequestMeta } from '../../domain/operations.ts';

/**
 * Runs a state-changing call and records it in the audit log with its outcome, whether
 * it succeeded, was refused with a typed error, or failed. The call's own error is
 * rethrown unchanged.
 */
export async function audited<T>(
  deps: { audit: AuditLog; clock: Clock },
  call: { action: string; arguments: unknown; nodeId: string | null; meta: RequestMeta },
  run: () => Promise<T>,
): Promise<T> {
  const at = new Date(deps.clock.now());
  let outcome = 'OK';
  try {
    return await run();
  } catch (e) {
    outcome = e instanceof LockkeeperError ? e.code : 'ERROR';
    throw e;
  } finally {
    await deps.audit.record({
      actor: call.meta.actor,
      action: call.action,
      arguments: call.arguments,
      reason: call.meta.reason,
      outcome,
      nodeId: call.nodeId,
      at,
    });
  }
}
