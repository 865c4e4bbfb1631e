/** Shard views the storage plans work on. Pure data. */
import type { Availability, SchedulingPolicy } from './policy.ts';
import { compareNatural } from '../compare.ts';

export type ShardPolicy = 'ACTIVE' | 'ESSENTIAL' | 'PAUSE' | 'STOP';

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

/** D1: tenant id, then shard number. */
export function byTenantAndNumber(a: PlanShard, b: PlanShard): number {
  return a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.shardNumber - b.shardNumber;
}

/** Node ids compare numerically when both are numbers (Neon's ids), else as strings. */
export function compareNodeIds(a: string, b: string): number {
  return compareNatural(a, b);
}
