/**
 * The scope every mutation and subscription needs, and every query that needs more than
 * viewer, with a call that exercises it. Arguments name things that do not exist, so an
 * allowed call answers a typed error and changes nothing.
 *
 * scopes.test.ts fails when the schema has a Mutation or Subscription field (or a
 * SimulationMutation field) that is not listed here: a new one needs a decision.
 */
import type { Scope } from '../../src/auth/scopes.ts';

let seq = 0;
const unique = () => `t${process.pid}-${++seq}`;

export interface Entry {
  scope: Scope;
  /** The document; a function when each call needs fresh values. */
  query: string | (() => string);
}

export const MUTATIONS: Record<string, Entry> = {
  startNodeDrain: { scope: 'operator', query: 'mutation { startNodeDrain(nodeId: "404", reason: "scope test") { __typename } }' },
  cancelNodeDrain: { scope: 'operator', query: 'mutation { cancelNodeDrain(nodeId: "404") { __typename } }' },
  startNodeFill: { scope: 'operator', query: 'mutation { startNodeFill(nodeId: "404") { __typename } }' },
  cancelNodeFill: { scope: 'operator', query: 'mutation { cancelNodeFill(nodeId: "404") { __typename } }' },
  enableMaintenanceMode: { scope: 'operator', query: 'mutation { enableMaintenanceMode(nodeId: "404", reason: "scope test") { __typename } }' },
  disableMaintenanceMode: { scope: 'operator', query: 'mutation { disableMaintenanceMode(nodeId: "404") { __typename } }' },
  clearMaintenanceError: { scope: 'operator', query: 'mutation { clearMaintenanceError(nodeId: "404") { __typename } }' },
  setVmMaintenanceStrategy: { scope: 'operator', query: 'mutation { setVmMaintenanceStrategy(vmId: "404", strategy: "Migrate") { __typename } }' },
  configureNode: { scope: 'admin', query: 'mutation { configureNode(nodeId: "404", policy: PAUSE) { __typename } }' },
  confirmNodeDown: { scope: 'operator', query: 'mutation { confirmNodeDown(nodeId: "404", reason: "scope test") { __typename } }' },
  createToken: { scope: 'admin', query: () => `mutation { createToken(name: "${unique()}", scope: VIEWER) { __typename } }` },
  revokeToken: { scope: 'admin', query: 'mutation { revokeToken(token: "no-such-token") { __typename } }' },
  startRollout: { scope: 'operator', query: 'mutation { startRollout(input: { nodes: ["404"], action: MAINTENANCE, reason: "scope test" }) { __typename } }' },
  rehearseRollout: {
    scope: 'operator',
    query: 'mutation { rehearseRollout(input: { nodes: ["404"], action: MAINTENANCE, reason: "scope test" }) { __typename } }',
  },
  pauseRollout: { scope: 'operator', query: 'mutation { pauseRollout(id: "404") { __typename } }' },
  resumeRollout: { scope: 'operator', query: 'mutation { resumeRollout(id: "404") { __typename } }' },
  continueRollout: { scope: 'operator', query: 'mutation { continueRollout(id: "404", nodeId: "404") { __typename } }' },
  cancelRollout: { scope: 'operator', query: 'mutation { cancelRollout(id: "404") { __typename } }' },
  simulation: { scope: 'admin', query: 'mutation { simulation { restartNode(nodeId: "404") { __typename } } }' },
  setNodeAvailability: { scope: 'admin', query: 'mutation { setNodeAvailability(nodeId: "404", availability: OFFLINE) { __typename } }' },
  startNodeDelete: { scope: 'admin', query: 'mutation { startNodeDelete(nodeId: "404") { __typename } }' },
  cancelNodeDelete: { scope: 'admin', query: 'mutation { cancelNodeDelete(nodeId: "404") { __typename } }' },
  migrateShard: { scope: 'admin', query: 'mutation { migrateShard(shardId: "404", nodeId: "404") { __typename } }' },
  migrateShardSecondary: { scope: 'admin', query: 'mutation { migrateShardSecondary(shardId: "404", nodeId: "404") { __typename } }' },
  cancelShardReconcile: { scope: 'admin', query: 'mutation { cancelShardReconcile(shardId: "404") { __typename } }' },
  setShardPolicy: { scope: 'admin', query: 'mutation { setShardPolicy(tenantId: "404", policy: PAUSE) { __typename } }' },
  setPreferredZone: { scope: 'admin', query: 'mutation { setPreferredZone(shardIds: ["404"], zone: "z") { __typename } }' },
  setTenantConfig: { scope: 'admin', query: 'mutation { setTenantConfig(tenantId: "404", config: {}) { __typename } }' },
  // On SQLite there is no stand-by: an allowed call answers a typed PreconditionFailedError.
  stepDown: { scope: 'admin', query: 'mutation { stepDown(reason: "scope test") { __typename } }' },
};

export const SUBSCRIPTIONS: Record<string, Entry> = {
  nodeChanged: { scope: 'viewer', query: 'subscription { nodeChanged { id } }' },
  workloadChanged: { scope: 'viewer', query: 'subscription { workloadChanged { id } }' },
  operationProgress: { scope: 'viewer', query: 'subscription { operationProgress(id: "404") { operation { id } } }' },
  eventLog: { scope: 'viewer', query: 'subscription { eventLog(after: 0) { seq } }' },
};

/** Queries needing more than viewer; every other query field must need exactly viewer. */
export const QUERIES_ABOVE_VIEWER: Record<string, Entry> = {
  tokens: { scope: 'admin', query: '{ tokens { name } }' },
  tenantConfig: { scope: 'admin', query: '{ tenantConfig(tenantId: "404") { __typename } }' },
};

/**
 * Every control of the simulated cluster (behind Mutation.simulation, admin), with a call
 * that the audit test makes; each must leave an audit row `simulation.<field>`.
 */
export const SIMULATION_MUTATIONS: Record<string, string> = {
  restartNode: 'mutation { simulation { restartNode(nodeId: "404") { __typename } } }',
  setNodeOnline: 'mutation { simulation { setNodeOnline(nodeId: "404", online: true) { __typename } } }',
  removeNode: 'mutation { simulation { removeNode(nodeId: "404") { __typename } } }',
  setLatencies: 'mutation { simulation { setLatencies(input: { migrate: 5 }) { ... on SimulationLatencies { migrate } } } }',
  injectFaults: 'mutation { simulation { injectFaults(input: { stuck: [] }) { ... on SimulationFaults { stuck } } } }',
  clearFaults: 'mutation { simulation { clearFaults { stuck } } }',
  setSecondaryLag: 'mutation { simulation { setSecondaryLag(shardId: "404", nodeId: "404", lagBytes: 1) { __typename } } }',
  setSecondaryHeatmapKnown: 'mutation { simulation { setSecondaryHeatmapKnown(shardId: "404", nodeId: "404", known: true) { __typename } } }',
};

export const queryOf = (entry: Entry) => (typeof entry.query === 'function' ? entry.query() : entry.query);
