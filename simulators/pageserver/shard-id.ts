/**
 * Neon's tenant shard id on the wire: `<tenant id, 32 hex>-<shard number:02x><shard count:02x>`,
 * or the bare tenant id for an unsharded tenant (shard count 0).
 */

const hex2 = (n: number) => n.toString(16).padStart(2, '0');

export function formatShardId(tenantId: string, shardNumber: number, shardCount: number): string {
  return shardCount === 0 ? tenantId : `${tenantId}-${hex2(shardNumber)}${hex2(shardCount)}`;
}

/** Shard number and count of an id; null when it is not a tenant shard id. */
export function parseShardId(id: string): { shardNumber: number; shardCount: number } | null {
  const m = /^[0-9a-f]{32}(?:-([0-9a-f]{2})([0-9a-f]{2}))?$/.exec(id);
  if (!m) return null;
  return m[1] === undefined ? { shardNumber: 0, shardCount: 0 } : { shardNumber: parseInt(m[1], 16), shardCount: parseInt(m[2]!, 16) };
}
