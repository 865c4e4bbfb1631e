/**
 * Neon's status codes and messages for the REST facade (neon:E1–E6, neon:L4–L5): the
 * typed errors of the engines, read with what the call was, become the answer Neon's
 * storage controller gives, prefixed as Neon's `ApiError` renders them (neon:E5).
 */
import { BackendError } from '../cluster/errors.ts';
import {
  ConflictError,
  DatabaseUnavailableError,
  InvalidInputError,
  LockkeeperError,
  NotFoundError,
  OperationLimitReachedError,
  PreconditionFailedError,
  ReconcileFailedError,
  TimeoutError,
  UnavailableError,
} from '../domain/errors.ts';
import { NEON_POLICY_NAMES, type SchedulingPolicy } from '../domain/storage/policy.ts';
import { PayloadTooLargeError } from './http-io.ts';

const CODE_OF_STATUS: Record<number, string> = {
  400: 'INVALID_INPUT',
  404: 'NOT_FOUND',
  408: 'TIMEOUT',
  409: 'CONFLICT',
  412: 'PRECONDITION_FAILED',
  503: 'UNAVAILABLE',
};

/** An answer with Neon's status and `{"msg"}` body; `code` is what the audit log records (the typed error's, when it came from one). */
export class NeonRefusal extends LockkeeperError {
  readonly code: string;
  constructor(
    readonly status: number,
    message: string,
    cause?: unknown,
  ) {
    super(message);
    this.code = cause instanceof LockkeeperError ? cause.code : (CODE_OF_STATUS[status] ?? 'ERROR');
  }
}

/** neon:E5: `NotFound: `, `Conflict: `, `Precondition failed: ` for 404, 409, 412; bare otherwise. */
export function neonMessage(status: number, message: string): string {
  const prefix = status === 404 ? 'NotFound: ' : status === 409 ? 'Conflict: ' : status === 412 ? 'Precondition failed: ' : '';
  return prefix + message;
}

/** Status of each typed error where no endpoint says otherwise. */
export function statusOf(error: LockkeeperError): number {
  if (error instanceof NotFoundError) return 404;
  if (error instanceof ConflictError) return 409;
  if (error instanceof OperationLimitReachedError) return 412;
  if (error instanceof PreconditionFailedError) return 412;
  if (error instanceof UnavailableError) return 503;
  if (error instanceof InvalidInputError) return 400;
  if (error instanceof PayloadTooLargeError) return 413;
  if (error instanceof TimeoutError) return 408;
  if (error instanceof ReconcileFailedError) return 500;
  return 500;
}

/** A backend's own refusal (registration, tombstones) as Neon answers it. */
export function backendStatus(error: BackendError): number {
  return { NotFound: 404, Conflict: 409, Unavailable: 503, Rejected: 400, Transient: 500 }[error.code];
}

export type NodeAction = 'drain' | 'fill' | 'delete';
const PAST = { drain: 'drained', fill: 'filled', delete: 'deleted' } as const;

/** A running node operation as Neon names it: `drain 2`. */
export const describeOperation = (op: { kind: string; nodeId: string }) => `${op.kind.toLowerCase()} ${op.nodeId}`;

/**
 * neon:E1, neon:E2, neon:L4: a start refused. An operation already running — on this node or
 * anywhere, one slot for the controller — is 412 (neon:E3: not 409); 409 only when the
 * policy says the operation runs but none does.
 */
export function startRefusal(
  action: NodeAction,
  nodeId: string,
  error: unknown,
  running: { kind: string; nodeId: string }[],
  policy: SchedulingPolicy,
): unknown {
  if (error instanceof NotFoundError) return new NeonRefusal(404, `Node ${nodeId} not registered`, error);
  if ((error instanceof ConflictError && error.operationId !== null) || error instanceof OperationLimitReachedError) {
    const ongoing = running.find((r) => r.nodeId === nodeId) ?? running[0];
    return new NeonRefusal(412, ongoing ? `Background operation already ongoing for node: ${describeOperation(ongoing)}` : error.message, error);
  }
  if (error instanceof DatabaseUnavailableError) return error;
  if (error instanceof UnavailableError) return new NeonRefusal(503, `Node ${nodeId} is currently unavailable`, error);
  if (error instanceof ConflictError) return new NeonRefusal(409, `Node ${nodeId} has ${action} in progress`, error);
  if (error instanceof PreconditionFailedError) {
    if (error.reason === 'NO_OTHER_SCHEDULABLE_NODES') return new NeonRefusal(412, 'No other schedulable nodes to drain to', error);
    if (error.reason === 'NO_SCHEDULABLE_NODES') return new NeonRefusal(412, 'No other schedulable nodes to move shards', error);
    if (error.reason === 'NO_OTHER_NODES') return new NeonRefusal(412, 'No other nodes to fill from', error);
    if (error.reason.startsWith('POLICY_'))
      return new NeonRefusal(412, `Node ${nodeId} cannot be ${PAST[action]} due to ${NEON_POLICY_NAMES[policy]} policy`, error);
  }
  return error;
}

/** neon:E4, neon:L5: a cancel refused. */
export function cancelRefusal(action: NodeAction, nodeId: string, error: unknown): unknown {
  if (error instanceof NotFoundError) return new NeonRefusal(404, `Node ${nodeId} not registered`, error);
  if (error instanceof PreconditionFailedError && error.reason.startsWith('NO_'))
    return new NeonRefusal(412, `Node ${nodeId} has no ${action} in progress`, error);
  return error;
}
