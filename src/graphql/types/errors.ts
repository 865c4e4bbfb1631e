import {
  ConflictError,
  InvalidInputError,
  LockkeeperError,
  NotFoundError,
  OperationLimitReachedError,
  PreconditionFailedError,
  ReconcileFailedError,
  TimeoutError,
  UnavailableError,
  type DatabaseUnavailableError,
} from '../../domain/errors.ts';
import { builder } from '../builder.ts';

/** Every typed error implements this, so clients can always ask `... on Error { code message }`. */
export const ErrorInterface = builder.interfaceRef<LockkeeperError>('Error').implement({
  fields: (t) => ({
    message: t.exposeString('message'),
    code: t.exposeString('code', { description: 'Stable machine-readable code, e.g. NOT_FOUND.' }),
  }),
});

const SubjectKindEnum = builder.enumType('SubjectKind', {
  values: {
    NODE: { value: 'node' },
    VM: { value: 'vm' },
    SHARD: { value: 'shard' },
    TENANT: { value: 'tenant' },
    OPERATION: { value: 'operation' },
    REHEARSAL: { value: 'rehearsal' },
  } as const,
});

builder.objectType(NotFoundError, {
  name: 'NotFoundError',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    kind: t.field({ type: SubjectKindEnum, resolve: (e) => e.kind }),
    id: t.exposeID('id'),
  }),
});

builder.objectType(ConflictError, {
  name: 'ConflictError',
  interfaces: [ErrorInterface],
  fields: (t) => ({ operationId: t.exposeID('operationId', { nullable: true }) }),
});

builder.objectType(UnavailableError, {
  name: 'UnavailableError',
  description: 'Something this needs does not answer now: a node, or the database (`database` names it); try again later.',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    nodeId: t.exposeID('nodeId', { nullable: true }),
    database: t.string({
      nullable: true,
      description: 'The database that is unavailable (the SQLite file, or the PostgreSQL URL without password); null when a node is.',
      // The errors plugin hands a proxy of the error (its prototype is the union member's): read the field.
      resolve: (e) => (e as Partial<DatabaseUnavailableError>).database ?? null,
    }),
  }),
});

export const BlockerType = builder.objectRef<{ id: string; reasons: string[] }>('Blocker').implement({
  description: 'A workload that stands in the way, and why.',
  fields: (t) => ({ id: t.exposeID('id'), reasons: t.exposeStringList('reasons') }),
});

builder.objectType(PreconditionFailedError, {
  name: 'PreconditionFailedError',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    reason: t.exposeString('reason'),
    operationId: t.exposeID('operationId', { nullable: true }),
    blockers: t.field({ type: [BlockerType], description: 'e.g. the non-migratable VMs that block maintenance (vm:N4).', resolve: (e) => e.blockers }),
  }),
});

builder.objectType(InvalidInputError, {
  name: 'InvalidInputError',
  interfaces: [ErrorInterface],
  fields: (t) => ({ field: t.exposeString('field'), value: t.exposeString('value') }),
});

builder.objectType(OperationLimitReachedError, {
  name: 'OperationLimitReachedError',
  interfaces: [ErrorInterface],
  fields: (t) => ({ limit: t.exposeInt('limit') }),
});

builder.objectType(TimeoutError, {
  name: 'TimeoutError',
  description: 'A wait ran out; what was waited for goes on (e.g. a shard reconcile beyond 30 s, neon:W4).',
  interfaces: [ErrorInterface],
  fields: () => ({}),
});

builder.objectType(ReconcileFailedError, {
  name: 'ReconcileFailedError',
  description: 'The backend tried and failed; what it changed is kept, and it retries in the background.',
  interfaces: [ErrorInterface],
  fields: () => ({}),
});
