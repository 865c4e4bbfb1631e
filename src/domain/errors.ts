/**
 * Errors a caller can act on. GraphQL exposes each as a typed member of a mutation's or
 * query's result union; the REST facade maps them to status codes. Anything else is an
 * unexpected fault and is masked.
 */
export abstract class LockkeeperError extends Error {
  abstract readonly code: string;
}

export type SubjectKind = 'node' | 'vm' | 'shard' | 'tenant' | 'operation' | 'rehearsal';

export class NotFoundError extends LockkeeperError {
  readonly code = 'NOT_FOUND';
  constructor(
    readonly kind: SubjectKind,
    readonly id: string,
  ) {
    super(`${kind} ${id} not found`);
  }
}

export class ConflictError extends LockkeeperError {
  readonly code = 'CONFLICT';
  constructor(
    message: string,
    readonly operationId: string | null = null,
  ) {
    super(message);
  }
}

export class UnavailableError extends LockkeeperError {
  readonly code = 'UNAVAILABLE';
  constructor(
    message: string,
    readonly nodeId: string | null = null,
  ) {
    super(message);
  }
}

/**
 * The database cannot be reached (stopped, restarting, unreachable, failing I/O): what needs it
 * is refused with this typed answer, never masked. `database` names it as an operator knows
 * it (the SQLite file, or the PostgreSQL URL without its password).
 */
export class DatabaseUnavailableError extends UnavailableError {
  /** Seconds a client refused for want of the database should wait before trying again (HTTP Retry-After). */
  static readonly RETRY_AFTER_S = 5;
  readonly subject = 'database';
  constructor(
    readonly database: string,
    /** What the driver said, e.g. "Can't reach database server at 10.0.0.5:5432". */
    readonly detail: string,
  ) {
    super(`database unavailable: ${database} (${detail}); try again once it is back`);
  }
}

export class PreconditionFailedError extends LockkeeperError {
  readonly code = 'PRECONDITION_FAILED';
  constructor(
    /** Machine-readable reason, e.g. NO_OTHER_SCHEDULABLE_NODES. */
    readonly reason: string,
    message: string,
    /** The operation that stands in the way, when there is one. */
    readonly operationId: string | null = null,
    /** The workloads that stand in the way and why (e.g. non-migratable VMs, vm:N4). */
    readonly blockers: { id: string; reasons: string[] }[] = [],
  ) {
    super(message);
  }
}

export class InvalidInputError extends LockkeeperError {
  readonly code = 'INVALID_INPUT';
  constructor(
    readonly field: string,
    readonly value: string,
    message: string,
  ) {
    super(message);
  }
}

export class OperationLimitReachedError extends LockkeeperError {
  readonly code = 'OPERATION_LIMIT_REACHED';
  constructor(
    readonly limit: number,
    message: string,
  ) {
    super(message);
  }
}

/** A wait the caller asked for ran out; what it waited for goes on (REST 408, neon:W4, neon:W6). */
export class TimeoutError extends LockkeeperError {
  readonly code = 'TIMEOUT';
}

/** The backend tried and failed (REST 500 with the reason, neon:W4); what it changed is kept. */
export class ReconcileFailedError extends LockkeeperError {
  readonly code = 'RECONCILE_FAILED';
}
