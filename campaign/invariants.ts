/**
 * The invariants a crash or fault campaign checks once a run has quiesced (issue 16 points
 * 1–2), and the kill tests in `npm test` check after each kill. They read what an operator
 * could read: the gateway's GraphQL API (the cluster as the backend reports it) and the
 * gateway's SQLite database (steps, events), never a process's memory.
 */
import Database from 'better-sqlite3';
import { stepsOfPlan } from '../src/store/operation-rows.ts';

interface VmView {
  id: string;
  status: string;
  runStrategy: string;
  nodeId: string | null;
  strategy: string;
  tracking: { nodeName: string; strategy: string; savedRunStrategy: string | null } | null;
}

interface NodeView {
  id: string;
  name: string;
  phase: string | null;
  cordoned: boolean;
  schedulingPolicy: string;
}

interface ShardView {
  id: string;
  attachedNodeId: string;
  secondaryNodeIds: string[];
}

export interface ClusterView {
  nodes: Map<string, NodeView>;
  vms: Map<string, VmView>;
  shards: Map<string, ShardView>;
}

async function postGraphQL(url: string, query: string): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  const body = (await res.json()) as { data?: unknown; errors?: unknown };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

/** Everything the invariants look at, through the API. */
export async function viewCluster(url: string): Promise<ClusterView> {
  const data = await postGraphQL(
    url,
    `{ nodes(first: 1000) { edges { node { id name maintenancePhase cordoned schedulingPolicy } } }
       vms(first: 1000) { edges { node { id status runStrategy maintenanceStrategy node { id } tracking { nodeName strategy savedRunStrategy } } } }
       shards(first: 1000) { edges { node { id attachedNodeId secondaryNodeIds } } } }`,
  );
  const nodes = new Map<string, NodeView>();
  for (const { node: n } of data.nodes.edges)
    nodes.set(n.id, { id: n.id, name: n.name, phase: n.maintenancePhase, cordoned: n.cordoned, schedulingPolicy: n.schedulingPolicy });
  const vms = new Map<string, VmView>();
  for (const { node: v } of data.vms.edges) {
    vms.set(v.id, {
      id: v.id,
      status: v.status,
      runStrategy: v.runStrategy,
      nodeId: v.node?.id ?? null,
      strategy: v.maintenanceStrategy,
      tracking: v.tracking,
    });
  }
  const shards = new Map<string, ShardView>();
  for (const { node: s } of data.shards.edges) shards.set(s.id, { id: s.id, attachedNodeId: s.attachedNodeId, secondaryNodeIds: s.secondaryNodeIds });
  return { nodes, vms, shards };
}

export interface StepRow {
  operationId: string;
  workloadKind: string;
  workloadId: string;
  state: string;
  reason: string | null;
  error: string | null;
}

interface EventRow {
  seq: number;
  type: string;
  nodeId: string | null;
  operationId: string | null;
  payload: string;
}

export interface DatabaseView {
  operations: { id: string; kind: string; nodeId: string | null; state: string; error: string | null }[];
  steps: StepRow[];
  events: EventRow[];
  tracking: Map<string, { nodeName: string; strategy: string; savedRunStrategy: string | null }>;
}

/**
 * Every step as the store reads it: the stored plan overlaid with the step rows recorded since
 * (src/store/operation-rows.ts). A step the plan already SKIPPED has a row only once its run
 * wrote one; a kill before that leaves it in the plan alone, where it is not lost.
 */
function stepsOf(plans: { operationId: string; plan: string }[], rows: StepRow[]): StepRow[] {
  const recorded = new Set(rows.map((r) => `${r.operationId}\u0000${r.workloadKind}\u0000${r.workloadId}`));
  const planned = plans.flatMap(({ operationId, plan }) =>
    stepsOfPlan(plan, 0)
      .filter((s) => !recorded.has(`${operationId}\u0000${s.workloadKind}\u0000${s.workloadId}`))
      .map((s) => ({ operationId, workloadKind: s.workloadKind, workloadId: s.workloadId, state: s.state, reason: s.reason, error: s.error })),
  );
  return [...rows, ...planned];
}

export function readDatabase(path: string): DatabaseView {
  const db = new Database(path, { readonly: true });
  try {
    return {
      operations: db.prepare('SELECT id, kind, nodeId, state, error FROM "Operation"').all() as DatabaseView['operations'],
      steps: stepsOf(
        db.prepare('SELECT operationId, plan FROM "OperationPlan"').all() as { operationId: string; plan: string }[],
        db.prepare('SELECT operationId, workloadKind, workloadId, state, reason, error FROM "OperationStep"').all() as StepRow[],
      ),
      events: db.prepare('SELECT seq, type, nodeId, operationId, payload FROM "Event" ORDER BY seq').all() as EventRow[],
      tracking: new Map(
        (
          db.prepare('SELECT vmId, nodeName, strategy, savedRunStrategy FROM "VmTracking"').all() as {
            vmId: string;
            nodeName: string;
            strategy: string;
            savedRunStrategy: string | null;
          }[]
        ).map((r) => [r.vmId, { nodeName: r.nodeName, strategy: r.strategy, savedRunStrategy: r.savedRunStrategy }]),
      ),
    };
  } finally {
    db.close();
  }
}

/** `RerunOnFailure` (the database) as `RERUN_ON_FAILURE` (the API). */
const asEnum = (value: string) => value.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();

/** STOPPED: a VM that was only stopped (issue 17); ABANDONED: in flight when a forced cancel ended its operation. */
const TERMINAL_STEP = new Set(['MOVED', 'STOPPED', 'SKIPPED', 'FAILED', 'ABANDONED']);
/** A succeeded operation had nothing abandoned: only a forced cancel or disable abandons, and it ends the operation CANCELLED. */
const SUCCEEDED_STEP = new Set(['MOVED', 'STOPPED', 'SKIPPED', 'FAILED']);
const ENDED_OPERATION = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
/** The reasons of steps an operation ended before trying (the runs' skipUnattempted). */
const NOT_ATTEMPTED = new Set(['NOT_ATTEMPTED', 'CANCELLED']);
/** A step's terminal event, under its operation: `VM_<ACTION>_<STATE>`, `SHARD_<STATE>`, `VM_STOPPED`, `STEP_ABANDONED`, or a rollout's node step's `ROLLOUT_NODE_<END>`. */
const TERMINAL_EVENT = /^((VM_[A-Z_]+|SHARD)_(MOVED|SKIPPED|FAILED)|VM_STOPPED|STEP_ABANDONED|ROLLOUT_NODE_(FINISHED|FAILED|SKIPPED))$/;

/** What the campaign knew before it started: each VM's run strategy, and the operations it was answered. */
export interface Ledger {
  initialRunStrategy: Map<string, string>;
  /** Operation ids the gateway answered to a start request (a request killed before its answer is not here). */
  startedOperations: Set<string>;
  /** VMs whose restart failed and was named in a disable's answer (vm:D2): they may stay off, tracked. */
  namedFailures: Set<string>;
}

/**
 * Every violation found, as sentences; empty means clean. Expects a quiesced run: no
 * operation running, no move in flight.
 */
export function findViolations(cluster: ClusterView, db: DatabaseView, ledger: Ledger): string[] {
  const out: string[] = [];

  // Operations: none lost, none left running, none duplicated (one live operation per node at most is the admission rule).
  const operationIds = new Set(db.operations.map((o) => o.id));
  for (const id of ledger.startedOperations) if (!operationIds.has(id)) out.push(`operation ${id} was answered to a start and is lost`);
  for (const o of db.operations) {
    if (!ENDED_OPERATION.has(o.state)) out.push(`operation ${o.id} (${o.kind} of node ${o.nodeId}) did not end: ${o.state}`);
    if (o.state === 'FAILED' && !o.error) out.push(`operation ${o.id} FAILED without naming why`);
  }

  // Steps: one per workload per operation; exactly one terminal event per finished step, none for another.
  const terminal = new Map<string, number>();
  for (const e of db.events) {
    if (e.operationId === null || !TERMINAL_EVENT.test(e.type)) continue;
    const payload = JSON.parse(e.payload) as { vm?: string; shard?: string; node?: string };
    const key = `${e.operationId} ${payload.vm ?? payload.shard ?? payload.node}`;
    terminal.set(key, (terminal.get(key) ?? 0) + 1);
  }
  // Every skip has its event, the plan's too (the admission writes those, storage:D2). Only the steps an
  // operation ended before trying (SKIPPED NOT_ATTEMPTED or CANCELLED under a FAILED or CANCELLED
  // operation) go without one: the operation's end says why.
  const endedBefore = new Set(db.operations.filter((o) => o.state === 'FAILED' || o.state === 'CANCELLED').map((o) => o.id));
  const seen = new Set<string>();
  for (const s of db.steps) {
    const key = `${s.operationId} ${s.workloadId}`;
    if (seen.has(key)) out.push(`operation ${s.operationId} has two steps for ${s.workloadId}`);
    seen.add(key);
    const events = terminal.get(key) ?? 0;
    terminal.delete(key);
    const notAttempted = s.state === 'SKIPPED' && events === 0 && endedBefore.has(s.operationId) && NOT_ATTEMPTED.has(s.reason ?? '');
    if (!notAttempted && TERMINAL_STEP.has(s.state) && events !== 1)
      out.push(`step ${s.workloadId} of operation ${s.operationId} is ${s.state} with ${events} terminal events`);
    if (!TERMINAL_STEP.has(s.state) && events !== 0)
      out.push(`step ${s.workloadId} of operation ${s.operationId} is ${s.state} yet has ${events} terminal events`);
    const op = db.operations.find((o) => o.id === s.operationId);
    if (op?.state === 'SUCCEEDED' && !SUCCEEDED_STEP.has(s.state)) out.push(`operation ${op.id} SUCCEEDED with step ${s.workloadId} ${s.state}`);
    if (s.state === 'FAILED' && !s.error) out.push(`step ${s.workloadId} of operation ${s.operationId} FAILED without naming why`);
  }
  for (const key of terminal.keys()) out.push(`terminal event without a step: ${key}`);

  // The event log: seq without gaps, from 1 (the first gap is enough to name).
  const gap = db.events.findIndex((e, i) => e.seq !== i + 1);
  if (gap >= 0) out.push(`event log: seq ${db.events[gap]!.seq} where ${gap + 1} was due (a gap)`);

  // Shards: exactly one attached location, never also a secondary; secondaries distinct.
  for (const s of cluster.shards.values()) {
    if (!cluster.nodes.has(s.attachedNodeId)) out.push(`shard ${s.id} is attached to unknown node ${s.attachedNodeId}`);
    if (s.secondaryNodeIds.includes(s.attachedNodeId)) out.push(`shard ${s.id} is attached and secondary on node ${s.attachedNodeId}`);
    if (new Set(s.secondaryNodeIds).size !== s.secondaryNodeIds.length) out.push(`shard ${s.id} lists a secondary twice`);
  }

  // vm:D2: a disable names each restart that failed, in its answer (the driver's ledger) and as a
  // VM_RESTART_FAILED event; the event is the only word of one a rollout's disable made. A VM
  // stopped again since (a VM_STOP… event after it) is not excused by the older failure.
  const lastFailed = new Map<string, number>();
  const lastStopped = new Map<string, number>();
  for (const e of db.events) {
    if (e.type !== 'VM_RESTART_FAILED' && !e.type.startsWith('VM_STOP')) continue;
    const vm = (JSON.parse(e.payload) as { vm?: string }).vm;
    if (vm) (e.type === 'VM_RESTART_FAILED' ? lastFailed : lastStopped).set(vm, e.seq);
  }
  const restartFailed = (id: string) => ledger.namedFailures.has(id) || (lastFailed.get(id) ?? -1) > (lastStopped.get(id) ?? -1);

  // VMs: in the state their strategy demands.
  const nodeByName = new Map([...cluster.nodes.values()].map((n) => [n.name, n]));
  for (const vm of cluster.vms.values()) {
    const initial = ledger.initialRunStrategy.get(vm.id);
    const host = vm.nodeId === null ? undefined : cluster.nodes.get(vm.nodeId);
    const running = vm.status === 'RUNNING';
    if (vm.status !== 'RUNNING' && vm.status !== 'STOPPED') out.push(`VM ${vm.id} is ${vm.status} after the run quiesced`);
    if (running && host?.phase === 'COMPLETED') out.push(`VM ${vm.id} runs on node ${host.id}, which is in maintenance (COMPLETED)`);
    const raw = db.tracking.get(vm.id);
    const copy = raw ? { ...raw, savedRunStrategy: raw.savedRunStrategy && asEnum(raw.savedRunStrategy) } : null;
    if (JSON.stringify(copy) !== JSON.stringify(vm.tracking))
      out.push(`VM ${vm.id}: tracking ${JSON.stringify(vm.tracking)} on the VM but ${JSON.stringify(copy)} in the database`);
    if (initial === undefined || initial === 'HALTED') continue;
    if (running) {
      // vm:T2: a restarted VM has its saved run strategy back.
      if (vm.runStrategy !== initial) out.push(`VM ${vm.id} runs with run strategy ${vm.runStrategy}, not its own ${initial}`);
      if (vm.tracking) out.push(`VM ${vm.id} runs but is still tracked to ${vm.tracking.nodeName}`);
      continue;
    }
    // Off: only a Shutdown VM may simply stay off; the others must be waiting for their node, tracked to it.
    if (vm.strategy === 'SHUTDOWN' && host === undefined) continue;
    const tracked = vm.tracking ? nodeByName.get(vm.tracking.nodeName) : undefined;
    if (!vm.tracking) out.push(`VM ${vm.id} (${vm.strategy}) is off and nothing will restart it (no tracking)`);
    else if (vm.tracking.savedRunStrategy !== initial)
      out.push(`VM ${vm.id} is tracked with saved run strategy ${vm.tracking.savedRunStrategy}, not its own ${initial}`);
    else if (!tracked?.phase && !restartFailed(vm.id))
      out.push(`VM ${vm.id} is off, tracked to ${vm.tracking.nodeName}, which is not in maintenance: nothing will restart it`);
    else if (vm.tracking.strategy === 'ShutdownAndRestartAfterEnable' && tracked?.phase === 'COMPLETED')
      out.push(`VM ${vm.id} (RestartAfterEnable) is still off though node ${tracked!.id} reached COMPLETED (vm:M4)`);
  }
  return out;
}
