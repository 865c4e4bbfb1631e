/**
 * Pre-checks of VALIDATING, in order vm:P1–P4. Force does not
 * bypass them (vm:F3), so they take no force flag.
 */
import { ConflictError, LockkeeperError, NotFoundError, PreconditionFailedError, UnavailableError } from '../errors.ts';
import { isSchedulable } from './scheduling.ts';
import type { MaintNode, PrecheckRefusal } from './types.ts';

/** Harvester counts these roles together for quorum (vm:P4). */
const CONTROL_PLANE_ROLES = ['control-plane', 'etcd', 'witness'] as const;

const isControlPlane = (node: MaintNode): boolean => node.roles.some((r) => (CONTROL_PLANE_ROLES as readonly string[]).includes(r));

/**
 * Every refusal that applies, vm:P1 first. An unknown node yields only NOT_FOUND (nothing
 * else can be judged). Empty when the node may enter maintenance.
 */
export function precheckMaintenance(nodeId: string, nodes: readonly MaintNode[]): PrecheckRefusal[] {
  const node = nodes.find((n) => n.id === nodeId);
  if (!node) return [{ code: 'NOT_FOUND', message: `node ${nodeId} not found` }];
  const refusals: PrecheckRefusal[] = [];
  if (!node.ready) refusals.push({ code: 'UNAVAILABLE', message: `node ${nodeId} is not ready` });
  if (node.maintenancePhase !== null) {
    refusals.push({
      code: 'ALREADY_IN_MAINTENANCE',
      phase: node.maintenancePhase,
      message: `node ${nodeId} is already in maintenance (phase ${node.maintenancePhase})`,
    });
  }
  const others = nodes.filter((n) => n.id !== nodeId);
  if (!others.some(isSchedulable)) {
    refusals.push({
      code: 'LAST_AVAILABLE_NODE',
      message: `node ${nodeId} is the last available node: no other node is ready, uncordoned and out of maintenance`,
    });
  }
  const quorum = controlPlaneQuorumRefusal(node, others);
  if (quorum) refusals.push(quorum);
  return refusals;
}

function controlPlaneQuorumRefusal(node: MaintNode, others: readonly MaintNode[]): PrecheckRefusal | null {
  if (!isControlPlane(node)) return null;
  const otherControlPlane = others.filter(isControlPlane);
  if (otherControlPlane.length === 0) {
    return { code: 'CONTROL_PLANE_QUORUM', message: `node ${node.id} is the only control-plane node of the cluster` };
  }
  const inMaintenance = otherControlPlane.filter((n) => n.maintenancePhase !== null).map((n) => n.id);
  if (inMaintenance.length === 0) return null;
  return {
    code: 'CONTROL_PLANE_QUORUM',
    message: `control-plane node ${node.id} cannot enter maintenance while control-plane node ${inMaintenance.join(', ')} is in maintenance`,
  };
}

/**
 * Lockkeeper's own node (issue 17): a gateway whose database volume cannot move with it
 * would stop, with its state, on the node it is taking down — and nobody would bring the
 * node back. Refused, force or not, until the gateway runs elsewhere or its volume can follow it.
 */
export function gatewayNodeRefusal(node: MaintNode, gateway: GatewayPlacement | null | undefined): PrecheckRefusal | null {
  if (!gateway?.nodeName || gateway.volumeMovable || (node.name !== gateway.nodeName && node.id !== gateway.nodeName)) return null;
  return {
    code: 'GATEWAY_ON_NODE',
    message:
      `Lockkeeper itself runs on node ${node.id} and its database volume cannot move to another node: ` +
      'move the gateway first (cordon the node, delete the lockkeeper pod and wait until it runs elsewhere), ' +
      'or set operations.gatewayVolumeMovable when its volume re-attaches on other nodes (see deploy/README.md)',
  };
}

/** Where the gateway runs (LOCKKEEPER_NODE_NAME, from the pod's spec.nodeName) and whether its volume can follow it. */
export interface GatewayPlacement {
  nodeName?: string | undefined;
  volumeMovable: boolean;
}

/** vm:P5: the typed error a refusal becomes (GraphQL result union member, REST status); a conflict names the maintenance still running, if any. */
export function refusalError(nodeId: string, refusal: PrecheckRefusal, runningOperationId: string | null = null): LockkeeperError {
  switch (refusal.code) {
    case 'NOT_FOUND':
      return new NotFoundError('node', nodeId);
    case 'UNAVAILABLE':
      return new UnavailableError(refusal.message, nodeId);
    case 'ALREADY_IN_MAINTENANCE':
      return new ConflictError(refusal.message, runningOperationId);
    case 'LAST_AVAILABLE_NODE':
    case 'CONTROL_PLANE_QUORUM':
    case 'GATEWAY_ON_NODE':
    case 'NO_VMS':
    case 'NON_MIGRATABLE_VMS':
      return new PreconditionFailedError(refusal.code, refusal.message);
  }
}
