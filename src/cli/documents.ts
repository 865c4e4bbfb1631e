/**
 * Every GraphQL document the `lockkeeper` client verbs send. `test/cli/documents.test.ts`
 * validates each against `schema.graphql`, so a schema change that breaks the CLI fails
 * `npm test` (rollout:T6).
 */

const ERROR = `... on Error { code message }`;
/** For unions that hold PreconditionFailedError: the workloads in the way (e.g. non-migratable VMs). */
const BLOCKED = `${ERROR} ... on PreconditionFailedError { refusal: reason blockers { id reasons } }`;
const OPERATION = `id kind nodeId state reason error createdAt finishedAt etaSeconds etaUnknownReason etaOverdueSeconds stalled
  counts { planned moving moved stopped skipped failed total }
  waitingOn { kind description }`;
const OPERATION_RESULT = `__typename ... on Operation { ${OPERATION} } ${BLOCKED}`;
const REHEARSAL = `id state samples seed summary error createdAt finishedAt progress { done total }`;
const SHARD = `id tenantId attachedNodeId secondaryNodeIds preferredZone policy pendingComputeNotification`;
const ROLLOUT = `rollout { currentWave nodesDone nodesTotal settings { action restart maxUnavailable order }
  nodes { nodeId wave phase state failure operations { id kind state } blockers { id reasons } allowUnsafeRestart } }`;

export const DOCUMENTS = {
  nodes: `query Nodes { nodes(first: 1000) { edges { node {
    id name zone roles availability cordoned schedulingPolicy maintenancePhase operation { id kind state }
    safeToRestart remainingWorkloads { kind id reason } } } } }`,
  vms: `query Vms($nodeId: ID) { vms(first: 1000, nodeId: $nodeId) { edges { node {
    id status node { id } maintenanceStrategy runStrategy migratable nonMigratableReasons } } } }`,
  shards: `query Shards($nodeId: ID) { shards(first: 1000, nodeId: $nodeId) { edges { node {
    id tenantId attachedNodeId secondaryNodeIds preferredZone policy } } } }`,
  nodeOperation: `query NodeOperation($id: ID!) { node(id: $id) { __typename ... on ClusterNode { operation { id kind } } ${ERROR} } }`,
  ops: `query Operations($nodeId: ID, $states: [OperationState!]) { operations(first: 200, nodeId: $nodeId, states: $states) { edges { node { ${OPERATION} } } } }`,
  operation: `query Operation($id: ID!) { operation(id: $id) { __typename ... on Operation { ${OPERATION} ${ROLLOUT} } ${ERROR} } }`,
  startNodeDrain: `mutation Drain($nodeId: ID!, $reason: String) { result: startNodeDrain(nodeId: $nodeId, reason: $reason) { ${OPERATION_RESULT} } }`,
  startNodeFill: `mutation Fill($nodeId: ID!, $reason: String) { result: startNodeFill(nodeId: $nodeId, reason: $reason) { ${OPERATION_RESULT} } }`,
  cancelNodeDrain: `mutation CancelDrain($nodeId: ID!, $reason: String, $force: Boolean) { result: cancelNodeDrain(nodeId: $nodeId, reason: $reason, force: $force) { ${OPERATION_RESULT} } }`,
  cancelNodeFill: `mutation CancelFill($nodeId: ID!, $reason: String, $force: Boolean) { result: cancelNodeFill(nodeId: $nodeId, reason: $reason, force: $force) { ${OPERATION_RESULT} } }`,
  maintenancePlan: `query Plan($nodeId: ID!, $force: Boolean) { maintenancePlan(nodeId: $nodeId, force: $force) {
    accepted refusals { code message blockers { id reasons } } warnings
    vms { vmId strategy action targetNodeId restart nonMigratableReasons } shards { shardId action toNodeId skipReason } } }`,
  enableMaintenanceMode: `mutation Enable($nodeId: ID!, $force: Boolean, $deadlineSeconds: Int, $reason: String) {
    result: enableMaintenanceMode(nodeId: $nodeId, force: $force, deadlineSeconds: $deadlineSeconds, reason: $reason) { ${OPERATION_RESULT} } }`,
  disableMaintenanceMode: `mutation Disable($nodeId: ID!, $reason: String, $force: Boolean) { result: disableMaintenanceMode(nodeId: $nodeId, reason: $reason, force: $force) {
    __typename ... on DisableMaintenanceResult { restartedVmIds failures { vmId message } warnings fillOperation { id } } ${BLOCKED} } }`,
  clearMaintenanceError: `mutation ClearError($nodeId: ID!, $reason: String) { result: clearMaintenanceError(nodeId: $nodeId, reason: $reason) {
    __typename ... on ClusterNode { id maintenancePhase cordoned } ${BLOCKED} } }`,
  confirmNodeDown: `mutation ConfirmNodeDown($nodeId: ID!, $reason: String) { result: confirmNodeDown(nodeId: $nodeId, reason: $reason) {
    __typename ... on ClusterNode { id availability } ${BLOCKED} } }`,
  configureNode: `mutation Configure($nodeId: ID!, $policy: SchedulingPolicy!, $reason: String) { result: configureNode(nodeId: $nodeId, policy: $policy, reason: $reason) {
    __typename ... on ClusterNode { id schedulingPolicy } ${BLOCKED} } }`,
  setNodeAvailability: `mutation Availability($nodeId: ID!, $availability: NodeAvailability!, $reason: String) {
    result: setNodeAvailability(nodeId: $nodeId, availability: $availability, reason: $reason) { __typename ... on ClusterNode { id availability } ${BLOCKED} } }`,
  startNodeDelete: `mutation Delete($nodeId: ID!, $force: Boolean, $reason: String) { result: startNodeDelete(nodeId: $nodeId, force: $force, reason: $reason) { ${OPERATION_RESULT} } }`,
  cancelNodeDelete: `mutation CancelDelete($nodeId: ID!, $reason: String) { result: cancelNodeDelete(nodeId: $nodeId, reason: $reason) { ${OPERATION_RESULT} } }`,
  migrateShard: `mutation Migrate($shardId: ID!, $nodeId: ID!, $originNodeId: ID, $prewarm: Boolean, $overrideScheduler: Boolean, $reason: String) {
    result: migrateShard(shardId: $shardId, nodeId: $nodeId, originNodeId: $originNodeId, prewarm: $prewarm, overrideScheduler: $overrideScheduler, reason: $reason) {
      __typename ... on ShardMigration { shard { ${SHARD} } operation { ${OPERATION} } } ${BLOCKED} } }`,
  migrateShardSecondary: `mutation MigrateSecondary($shardId: ID!, $nodeId: ID!, $reason: String) {
    result: migrateShardSecondary(shardId: $shardId, nodeId: $nodeId, reason: $reason) { __typename ... on TenantShard { ${SHARD} } ${BLOCKED} } }`,
  cancelShardReconcile: `mutation CancelReconcile($shardId: ID!, $reason: String) {
    result: cancelShardReconcile(shardId: $shardId, reason: $reason) { __typename ... on TenantShard { ${SHARD} } ${BLOCKED} } }`,
  tenantConfig: `query TenantConfig($tenantId: String!) {
    result: tenantConfig(tenantId: $tenantId) { __typename ... on TenantConfigResult { tenantId config } ${ERROR} } }`,
  setTenantConfig: `mutation SetTenantConfig($tenantId: String!, $config: JSON!, $mode: TenantConfigMode, $reason: String) {
    result: setTenantConfig(tenantId: $tenantId, config: $config, mode: $mode, reason: $reason) { __typename ... on TenantConfigResult { tenantId config } ${BLOCKED} } }`,
  setShardPolicy: `mutation ShardPolicy($tenantId: String!, $policy: ShardSchedulingPolicy, $secondaryCount: Int, $reason: String) {
    result: setShardPolicy(tenantId: $tenantId, policy: $policy, secondaryCount: $secondaryCount, reason: $reason) { __typename ... on ShardPolicyResult { shards { ${SHARD} } } ${BLOCKED} } }`,
  setPreferredZone: `mutation PreferredZone($shardIds: [ID!]!, $zone: String, $reason: String) {
    result: setPreferredZone(shardIds: $shardIds, zone: $zone, reason: $reason) { __typename ... on PreferredZoneResult { updated } ${BLOCKED} } }`,
  setVmMaintenanceStrategy: `mutation Strategy($vmId: ID, $selector: VmSelectorInput, $strategy: String, $reason: String) {
    result: setVmMaintenanceStrategy(vmId: $vmId, selector: $selector, strategy: $strategy, reason: $reason) {
      __typename ... on SetVmMaintenanceStrategyResult { vms { id maintenanceStrategy maintenanceStrategyLabel } } ${ERROR} } }`,
  rolloutPlan: `query RolloutPlan($input: StartRolloutInput!) { result: rolloutPlan(input: $input) { __typename
    ... on RolloutPlan { order waves { number nodeIds } nodes { nodeId wave maintenance { accepted refusals { code message } } drain { shardId action } drainRefusal } }
    ${ERROR} } }`,
  startRollout: `mutation StartRollout($input: StartRolloutInput!, $rehearsal: ID) { result: startRollout(input: $input, rehearsal: $rehearsal) {
    __typename ... on Operation { ${OPERATION} ${ROLLOUT} } ${BLOCKED} ... on RehearsalStaleError { changes { code message } } } }`,
  rehearseRollout: `mutation RehearseRollout($input: StartRolloutInput!, $samples: Int, $seed: Int) {
    result: rehearseRollout(input: $input, samples: $samples, seed: $seed) { __typename ... on Rehearsal { ${REHEARSAL} } ${ERROR} } }`,
  rehearsal: `query Rehearsal($id: ID!) { result: rehearsal(id: $id) { __typename ... on Rehearsal { ${REHEARSAL}
    report { samples duration { p10 p50 p90 } peakNodesOut
      waves { wave nodeIds start { p10 p50 p90 } duration { p10 p50 p90 } }
      nodes { nodeId wave duration { p10 p50 p90 } leftOnNode safeToRestart }
      pauses { reason nodeId workload message probability typicalAtSeconds }
      vmsLeftStopped { vmId probability }
      outcomes { succeeded failed cancelled gaveUp } durationSources { workload node cluster default } } } ${ERROR} } }`,
  pauseRollout: `mutation PauseRollout($id: ID!, $reason: String) { result: pauseRollout(id: $id, reason: $reason) { ${OPERATION_RESULT} } }`,
  resumeRollout: `mutation ResumeRollout($id: ID!, $allowUnsafeRestart: Boolean, $allowUnsafeRestartNodes: [ID!], $reason: String) {
    result: resumeRollout(id: $id, allowUnsafeRestart: $allowUnsafeRestart, allowUnsafeRestartNodes: $allowUnsafeRestartNodes, reason: $reason) {
      ${OPERATION_RESULT} } }`,
  continueRollout: `mutation ContinueRollout($id: ID!, $nodeId: ID!, $reason: String) { result: continueRollout(id: $id, nodeId: $nodeId, reason: $reason) { ${OPERATION_RESULT} } }`,
  cancelRollout: `mutation CancelRollout($id: ID!, $reason: String) { result: cancelRollout(id: $id, reason: $reason) { ${OPERATION_RESULT} } }`,
  eventLog: `query Events($after: Int) { eventLog(after: $after, first: 1000) { events { seq at type nodeId operationId payload } nextCursor hasMore } }`,
  followEvents: `subscription FollowEvents($after: Int) { eventLog(after: $after) { seq at type nodeId operationId payload } }`,
  progress: `subscription Progress($id: ID!) { operationProgress(id: $id) {
    operation { ${OPERATION} rollout { currentWave nodesDone nodesTotal } remaining { kind id reason message } }
    steps { workloadKind workloadId state reason error } } }`,
  leadership: `query Leadership { leadership { role replica epoch leaseExpiresAt takeovers leader { address epoch leaseExpiresAt } } }`,
  stepDown: `mutation StepDown($reason: String) { result: stepDown(reason: $reason) {
    __typename ... on Leadership { role replica epoch leader { address epoch } } ${ERROR} } }`,
} as const;
