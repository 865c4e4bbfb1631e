import type { TestApp } from '../support/graphql-app.ts';

/**
 * Moves virtual time in small steps, letting real I/O (SQLite) run between them, until
 * `until()` holds. Fails loudly instead of hanging.
 */
export async function driveUntil(t: TestApp, until: () => boolean | Promise<boolean>, { stepMs = 50, maxMs = 3_600_000 } = {}): Promise<void> {
  for (let elapsed = 0; elapsed <= maxMs; elapsed += stepMs) {
    if (await until()) return;
    await t.clock.advance(stepMs);
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`condition not reached within ${maxMs} ms of virtual time`);
}

/** Drives time until the node has no running operation, then returns the last one's final state. */
export async function settle(t: TestApp, nodeId: string, options?: { stepMs?: number; maxMs?: number }) {
  await driveUntil(t, () => t.app.storage.activeOperation(nodeId) === null, options);
  const [latest] = await t.app.operations.listOperations({ nodeId });
  return latest!;
}

export const OPERATION_FIELDS = `id kind nodeId state reason startedBy error
  counts { planned moving moved skipped failed total skippedByReason { reason count } failedByReason { reason count } }
  waitingOn { kind description nodeId workloadIds since } createdAt startedAt finishedAt eta etaSeconds`;

/** The typed-union result of a start or cancel mutation (cancels cannot meet Conflict or the limit). */
function operationResult(mutation: string): string {
  const startOnly = mutation.startsWith('start') ? '... on ConflictError { operationId } ... on OperationLimitReachedError { limit }' : '';
  return `__typename ... on Operation { ${OPERATION_FIELDS} } ... on Error { code message }
    ... on PreconditionFailedError { failedReason: reason operationId } ${startOnly}`;
}

export async function mutate(t: TestApp, name: string, nodeId: string, extra = '') {
  const res = await t.gql(`mutation { r: ${name}(nodeId: "${nodeId}"${extra}) { ${operationResult(name)} } }`);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data.r;
}

export async function policyOf(t: TestApp, nodeId: string): Promise<string> {
  const res = await t.gql(`{ node(id: "${nodeId}") { ... on ClusterNode { schedulingPolicy } } }`);
  return res.data.node.schedulingPolicy;
}

export async function attachedCounts(t: TestApp): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const s of await t.cluster.listShards()) counts[s.attachedNodeId] = (counts[s.attachedNodeId] ?? 0) + 1;
  return counts;
}
