/** Small builders for VM-maintenance domain tests. */
import type { MaintNode, MaintVm } from '../../../src/domain/vm/types.ts';

export function node(id: string, extra: Partial<MaintNode> = {}): MaintNode {
  return { id, name: `node-${id}`, ready: true, cordoned: false, roles: ['worker'], labels: {}, maintenancePhase: null, ...extra };
}

export function vm(namespace: string, name: string, nodeId: string | null, extra: Partial<MaintVm> = {}): MaintVm {
  return {
    id: `${namespace}/${name}`,
    namespace,
    name,
    nodeId,
    runStrategy: 'Always',
    status: nodeId === null ? 'Stopped' : 'Running',
    maintenanceStrategyLabel: null,
    volumes: [],
    liveMigratable: true,
    liveMigratableReason: null,
    nodeSelector: {},
    requiredNodeAffinity: [],
    tracking: null,
    ...extra,
  };
}

/** A volume whose only healthy replica is on `nodeId` (vm:N1). */
export const lastReplicaOn = (nodeId: string, name = 'disk0'): MaintVm['volumes'][number] => ({
  name,
  replicas: [
    { nodeId, healthy: true },
    { nodeId: 'elsewhere', healthy: false },
  ],
});

export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
