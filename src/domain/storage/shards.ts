/** Shard views the storage plans work on. Pure data. */
import type { Availability, SchedulingPolicy } from './policy.ts';

export const SHARD_POLICIES = ['ACTIVE', 'ESSENTIAL', 'PAUSE', 'STOP'] as const;
export type ShardPolicy = (typeof SHARD_POLICIES)[number];

export interface PlanShard {
  id: string;
  tenantId: string;
  shardNumber: number;
  shardCount: number;
  attachedNodeId: string;
  secondaryNodeIds: string[];
  preferredZone: string | null;
  policy: ShardPolicy;
}

export interface PlanNode {
  id: string;
  zone: string | null;
  availability: Availability;
  policy: SchedulingPolicy;
}

/** storage:D1: tenant id, then shard number. */
export function byTenantAndNumber(a: PlanShard, b: PlanShard): number {
  return a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.shardNumber - b.shardNumber;
}
