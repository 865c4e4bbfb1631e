import { BackendError } from '../../src/cluster/errors.ts';
import type { DelegatedMaintenanceView, MaintenanceDelegate } from '../../src/cluster/node-maintenance.ts';
import { nodeSubject, type KubeApi } from './api.ts';
import { call, RESOURCES } from './kube.ts';
import { maintenanceMarkOf } from './mapping.ts';
import type { KubevirtOptions } from './options.ts';

/** The CRD whose presence means Harvester's controllers run in the cluster (k8s:H9). */
const HARVESTER_CRD = 'settings.harvesterhci.io';

/** k8s:H9: is Harvester there? One GET of its settings CRD (404: no). */
async function harvesterPresent(api: KubeApi): Promise<boolean> {
  try {
    await call('get', RESOURCES.crds, () => api.k.extensions.readCustomResourceDefinition({ name: HARVESTER_CRD }));
    return true;
  } catch (e) {
    if (e instanceof BackendError && e.code === 'NotFound') return false;
    throw e;
  }
}

/** The mode for this cluster: detected at start (`auto`) or forced by the config; null = Lockkeeper acts itself. */
export async function harvesterDelegate(api: KubeApi, mode: KubevirtOptions['harvester']): Promise<MaintenanceDelegate | null> {
  if (mode === 'act') return null;
  if (mode === 'auto' && !(await harvesterPresent(api))) return null;
  const reason = mode === 'delegate' ? 'config: harvester = delegate' : `CRD ${HARVESTER_CRD} found at start`;
  return {
    controller: 'Harvester',
    reason,
    async observe(nodeId: string): Promise<DelegatedMaintenanceView> {
      const node = await api.readNode(nodeId);
      if (!node) throw new BackendError('NotFound', `node ${nodeId} not found`, nodeSubject(nodeId));
      // Harvester's controller returns its error to its work queue and records it nowhere on the node.
      return { mark: maintenanceMarkOf(node) ?? null, failure: null };
    },
  };
}
