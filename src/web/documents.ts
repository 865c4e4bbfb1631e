/** The dashboard's GraphQL documents; test/cli/documents.test.ts validates them against schema.graphql too. */
import { etaText, type EtaFields } from '../domain/durations.ts';

/** The ETA cell of a running operation in the dashboard's operations table: never a time in the past (issue 30, point 3). */
export const operationEta = (op: EtaFields) => {
  const text = etaText(op);
  return text === '--' ? '' : text.startsWith('over') || text.startsWith('stalled') ? text : `ETA ${text}`;
};

const ERROR = `... on Error { code message } ... on PreconditionFailedError { refusal: reason blockers { id reasons } }`;
/** A wave's predicted start and duration, in seconds: what the time axis and the predicted-vs-actual table draw. */
const REPORT_WAVES = `duration { p10 p50 p90 } waves { wave nodeIds start { p10 p50 p90 } duration { p10 p50 p90 } }`;
const OPERATION = `__typename ... on Operation { id kind nodeId state } ${ERROR}`;

export const WEB_DOCUMENTS = {
  dashboard: `query Dashboard($first: Int, $after: String, $last: Int, $before: String, $states: [OperationState!], $kind: OperationKind, $nodeId: ID) {
    caller { name scope }
    nodes(first: 1000) { edges { node {
      id name zone roles availability cordoned schedulingPolicy maintenancePhase operation { id kind state }
      safeToRestart remainingWorkloads { kind id reason } } } }
    operations(first: $first, after: $after, last: $last, before: $before, states: $states, kind: $kind, nodeId: $nodeId) {
      totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      edges { node {
      id kind nodeId state reason error createdAt startedAt finishedAt startedBy etaSeconds etaUnknownReason etaOverdueSeconds stalled
      counts { planned moving moved stopped skipped failed abandoned total } waitingOn { description since stalled { workloadKind workloadId action since expectedSeconds overSeconds } }
      abandonedSteps: steps(first: 20, states: [ABANDONED]) { edges { node { workloadKind workloadId action error recheck { settled nodeId description } } } }
      rollout { currentWave nodesDone nodesTotal settings { action restart maxUnavailable } nodes { nodeId phase wave startedAt finishedAt } }
      rehearsal { id report { ${REPORT_WAVES} } } } } } }`,
  /** An operation's own page: its events, and the audit rows of its node while it ran (audit rows carry no operation id). */
  operationDetails: `query OperationDetails($id: ID!, $nodeId: ID, $from: DateTime, $to: DateTime) {
    operation(id: $id) { __typename ... on Operation { id kind nodeId state reason error startedAt finishedAt startedBy } ... on Error { code message } }
    eventLog(operationId: $id, first: 500) { events { seq at type nodeId payload } hasMore }
    auditLog(first: 100, nodeId: $nodeId, from: $from, to: $to) { edges { node { id at actor action reason outcome arguments } } } }`,
  caller: `query Caller { caller { name scope } }`,
  events: `subscription Events($after: Int) { eventLog(after: $after) { seq type nodeId operationId } }`,
  maintenancePlan: `query MaintenancePlan($nodeId: ID!, $force: Boolean) { maintenancePlan(nodeId: $nodeId, force: $force) {
    accepted refusals { code message blockers { id reasons } } warnings vms { vmId action targetNodeId restart } shards { shardId action toNodeId skipReason } } }`,
  rolloutPlan: `query RolloutPlan($input: StartRolloutInput!) { rolloutPlan(input: $input) { __typename
    ... on RolloutPlan { waves { number nodeIds } nodes { nodeId wave maintenance { accepted refusals { code message } } drain { shardId action toNodeId skipReason } drainRefusal } }
    ... on Error { code message } } }`,
  startNodeDrain: `mutation Drain($nodeId: ID!, $reason: String) { result: startNodeDrain(nodeId: $nodeId, reason: $reason) { ${OPERATION} } }`,
  startNodeFill: `mutation Fill($nodeId: ID!, $reason: String) { result: startNodeFill(nodeId: $nodeId, reason: $reason) { ${OPERATION} } }`,
  cancelNodeDrain: `mutation CancelDrain($nodeId: ID!, $force: Boolean, $reason: String) { result: cancelNodeDrain(nodeId: $nodeId, force: $force, reason: $reason) { ${OPERATION} } }`,
  cancelNodeFill: `mutation CancelFill($nodeId: ID!, $force: Boolean, $reason: String) { result: cancelNodeFill(nodeId: $nodeId, force: $force, reason: $reason) { ${OPERATION} } }`,
  enableMaintenanceMode: `mutation Enable($nodeId: ID!, $force: Boolean, $reason: String) { result: enableMaintenanceMode(nodeId: $nodeId, force: $force, reason: $reason) { ${OPERATION} } }`,
  disableMaintenanceMode: `mutation Disable($nodeId: ID!, $force: Boolean, $reason: String) { result: disableMaintenanceMode(nodeId: $nodeId, force: $force, reason: $reason) {
    __typename ... on DisableMaintenanceResult { restartedVmIds warnings } ${ERROR} } }`,
  startRollout: `mutation StartRollout($input: StartRolloutInput!, $rehearsal: ID) { result: startRollout(input: $input, rehearsal: $rehearsal) {
    __typename ... on Operation { id kind state } ... on RehearsalStaleError { changes { code message } } ... on Error { code message } } }`,
  rehearseRollout: `mutation RehearseRollout($input: StartRolloutInput!, $samples: Int) { result: rehearseRollout(input: $input, samples: $samples) {
    __typename ... on Rehearsal { id state } ... on Error { code message } } }`,
  rehearsal: `query Rehearsal($id: ID!) { rehearsal(id: $id) { __typename ... on Error { code message }
    ... on Rehearsal { id state error samples seed summary progress { done total }
      report { ${REPORT_WAVES} peakNodesOut outcomes { succeeded gaveUp failed cancelled }
        pauses { reason nodeId workload message probability typicalAtSeconds } vmsLeftStopped { vmId probability }
        durationSources { workload node cluster default } } } } }`,
  pauseRollout: `mutation Pause($id: ID!, $reason: String) { result: pauseRollout(id: $id, reason: $reason) { ${OPERATION} } }`,
  resumeRollout: `mutation Resume($id: ID!, $reason: String) { result: resumeRollout(id: $id, reason: $reason) { ${OPERATION} } }`,
  continueRollout: `mutation Continue($id: ID!, $nodeId: ID!, $reason: String) { result: continueRollout(id: $id, nodeId: $nodeId, reason: $reason) { ${OPERATION} } }`,
  cancelRollout: `mutation CancelRollout($id: ID!, $reason: String) { result: cancelRollout(id: $id, reason: $reason) { ${OPERATION} } }`,
} as const;
