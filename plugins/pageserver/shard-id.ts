/**
 * Neon's tenant shard id: `<tenant id, 32 hex>-<shard number:02x><shard count:02x>`, or the
 * bare tenant id for an unsharded tenant (shard count 0).
 */
export interface TenantShardId {
  tenantId: string;
  shardNumber: number;
  shardCount: number;
}

const hex2 = (n: number) => n.toString(16).padStart(2, '0');

export function formatTenantShardId({ tenantId, shardNumber, shardCount }: TenantShardId): string {
  return shardCount === 0 ? tenantId : `${tenantId}-${hex2(shardNumber)}${hex2(shardCount)}`;
}

/** Parses an id; null when it is not one. */
export function parseTenantShardId(id: string): TenantShardId | null {
  const m = /^([0-9a-f]{32})(?:-([0-9a-f]{2})([0-9a-f]{2}))?$/.exec(id);
  if (!m) return null;
  if (m[2] === undefined) return { tenantId: m[1]!, shardNumber: 0, shardCount: 0 };
  return { tenantId: m[1]!, shardNumber: parseInt(m[2], 16), shardCount: parseInt(m[3]!, 16) };
}
