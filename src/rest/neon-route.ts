import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import type { Scope } from '../auth/scopes.ts';
import type { ClusterBackend } from '../cluster/backend.ts';
import type { Clock } from '../cluster/clock.ts';
import { issuePath } from '../cluster/zod-issues.ts';
import { InvalidInputError } from '../domain/errors.ts';
import type { RequestMeta } from '../domain/operations.ts';
import type { Logger } from '../logger.ts';
import type { DeleteEngine } from '../operations/delete/engine.ts';
import type { FailoverEngine } from '../operations/failover/engine.ts';
import type { RemainingReader } from '../operations/core/remaining-reader.ts';
import type { ShardControls } from '../operations/shard-controls/service.ts';
import type { StorageEngine } from '../operations/storage/engine.ts';
import type { AuditLog } from '../store/audit-log.ts';

/** What the REST facade's routes are built from and share. */
export interface NeonFacadeDeps {
  storage: Pick<
    StorageEngine,
    'startDrain' | 'cancelDrain' | 'startFill' | 'cancelFill' | 'configureNode' | 'policyOf' | 'activeOperation' | 'runningNodeOperations'
  >;
  /** Commanded availability (neon:E6); absent: a config asking for another availability is refused. */
  failover?: Pick<FailoverEngine, 'setNodeAvailability'>;
  /** Node deletes (neon:L4–L7); absent: those routes answer 412. */
  deletes?: Pick<DeleteEngine, 'startDelete' | 'cancelDelete' | 'deleteNow' | 'dropNode'>;
  /** Per-shard controls (neon:W1–W9); absent: those routes answer 412. */
  shardControls?: Pick<
    ShardControls,
    | 'migrate'
    | 'migrateSecondary'
    | 'cancelReconcile'
    | 'setTenantPolicy'
    | 'setPreferredZones'
    | 'describeTenant'
    | 'getTenantConfig'
    | 'setTenantConfig'
    | 'patchTenantConfig'
  >;
  backend: Pick<ClusterBackend, 'listNodes' | 'getNode' | 'listShards' | 'registry' | 'nodeAliases'>;
  audit: AuditLog;
  clock: Clock;
  /** What would lose service if a node restarted now; absent: the node objects carry no safety fields. */
  remaining?: Pick<RemainingReader, 'ofNodes'>;
  /** Recorded as the actor of every state-changing call; default `rest`. */
  actor?: string;
  /** Where unexpected faults are logged (never in the response). */
  log?: Logger;
  /** Largest accepted request body (config `limits.maxBodyBytes`). */
  maxBodyBytes: number;
  /**
   * Authenticates and authorizes a call before it runs: resolves with the actor, or throws
   * an HttpError (401, 403, 429). Absent: every caller is `actor`.
   */
  authorize?: (req: IncomingMessage, needed: Scope, changesState: boolean) => Promise<{ actor: string }>;
  /** The database's errors as callers should see them (DatabaseAvailability.typed): an outage answers 503 naming it. */
  typedError?: (error: unknown) => unknown;
}

/** One call to a route: its path parameters (`node_id` canonical), query, raw body, who and why. */
export interface Call {
  params: Record<string, string>;
  query: URLSearchParams;
  body: Buffer;
  meta: RequestMeta;
}

export interface Reply {
  status: number;
  body: unknown;
}

/** A route: its pattern (e.g. `/control/v1/node/:node_id/drain`, also the audit's action) and handler per method. */
export interface Route {
  pattern: string;
  methods: Record<string, (call: Call) => Promise<Reply>>;
  /** Scope per method; default: GET viewer, others admin. */
  scopes?: Record<string, Scope>;
}

export const ACCEPTED: Reply = { status: 202, body: null };
export const OK: Reply = { status: 200, body: null };

/** Parses a JSON body with a zod schema; InvalidInputError naming the field otherwise. */
export function parseJsonBody<S extends z.ZodType>(body: Buffer, schema: S): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    throw new InvalidInputError('body', '', 'request body is not valid JSON');
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issuePath(issue.path, { root: 'body', index: 'dot' });
    throw new InvalidInputError(path, '', `invalid ${path}: ${issue.message}`);
  }
  return parsed.data;
}
