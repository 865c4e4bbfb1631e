/**
 * Drives tasks through the gateway's API the way a careful operator script does: every step
 * looks first and then acts, so after a kill (a request without an answer) it simply looks
 * again and carries on. Requests that fail because no gateway is listening are retried once
 * one is; typed errors are answers, not failures.
 */
import type { CampaignCluster } from './cluster.ts';
import type { Ledger } from './invariants.ts';

/**
 * A rollout (issue 16 point 1) takes `nodeId` and then `secondNodeId` out, one at a time
 * (rollout:O1): `MAINTENANCE` (the simulated cluster) or `DRAIN_FILL` (the pageservers). With
 * `WAIT_FOR_REATTACH` the campaign restarts each node when the rollout waits for it (a
 * pageserver restart; the simulation's `restartNode`), with `CONFIRM` it says `continueRollout`.
 * An operator holds a third node, `heldNodeId`, out of service (policy PAUSE) as the rollout
 * starts, and puts it back once the rollout waits on its budget (or a node step started, or
 * 5 s passed): the budget alone must keep the rollout's first node in (rollout:O5, checked
 * from the event log by order-invariants.ts).
 */
export type Task =
  | { kind: 'maintain' | 'drainFill'; nodeId: string }
  | {
      kind: 'rollout';
      action: 'MAINTENANCE' | 'DRAIN_FILL';
      nodeId: string;
      restart: 'NONE' | 'WAIT_FOR_REATTACH' | 'CONFIRM';
      secondNodeId: string;
      heldNodeId: string;
    };

/** How long the held node stays out at most when the rollout shows no sign (a rollout that ignores its budget). */
const HOLD_MS = 5_000;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Driver {
  constructor(
    private readonly cluster: CampaignCluster,
    private readonly ledger: Ledger,
    private readonly log: (line: string) => void,
    /** How a drained node is restarted (the pageserver backend restarts the pageserver); default: said with configureNode. */
    private readonly restartNode?: (nodeId: string) => Promise<void>,
  ) {}

  /** One GraphQL request, retried while no gateway answers (killed, restarting). */
  async gql(query: string): Promise<any> {
    for (;;) {
      const g = this.cluster.gateway;
      if (g?.url) {
        try {
          const res = await fetch(g.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
          const body = (await res.json()) as { data?: unknown; errors?: unknown };
          if (body.errors) throw new Error(`GraphQL errors: ${JSON.stringify(body.errors)}`);
          return body.data;
        } catch (e) {
          if (!(e instanceof TypeError) && !(e instanceof SyntaxError)) throw e;
        }
      }
      await pause(200);
    }
  }

  private async node(nodeId: string): Promise<{ phase: string | null; policy: string; availability: string | null; running: string[] }> {
    const data = await this.gql(
      `{ node(id: "${nodeId}") { ... on ClusterNode { maintenancePhase schedulingPolicy availability } }
         operations(first: 50, nodeId: "${nodeId}", states: [RUNNING, CANCELLING]) { edges { node { id } } } }`,
    );
    return {
      phase: data.node.maintenancePhase,
      policy: data.node.schedulingPolicy,
      availability: data.node.availability,
      running: data.operations.edges.map((e: any) => e.node.id),
    };
  }

  private async mutate(field: string, args: string, select: string): Promise<any> {
    return (await this.gql(`mutation { r: ${field}(${args}) { __typename ${select} ... on Error { code message } } }`)).r;
  }

  private started(r: any): void {
    if (r.__typename === 'Operation') this.ledger.startedOperations.add(r.id);
  }

  private async rolloutIds(): Promise<string[]> {
    return (await this.gql('{ operations(first: 1000, kind: ROLLOUT) { edges { node { id } } } }')).operations.edges.map((e: any) => e.node.id);
  }

  /**
   * A rollout of two nodes: started once (a start whose answer a kill cut off is found by
   * looking for a rollout that was not there before; a repeated start is refused CONFLICT
   * while it runs), then waited for until it ends.
   */
  private async rollout(task: Task & { kind: 'rollout' }, late: () => boolean): Promise<boolean> {
    const known = new Set(await this.rolloutIds());
    const hold = async (policy: 'PAUSE' | 'ACTIVE') => {
      const r = await this.mutate('configureNode', `nodeId: "${task.heldNodeId}", policy: ${policy}, reason: "campaign: held out during a rollout"`, '');
      if (r.__typename !== 'ClusterNode') this.log(`  configureNode ${task.heldNodeId} ${policy} refused: ${r.code} ${r.message}`);
    };
    await hold('PAUSE');
    const held = { until: Date.now() + HOLD_MS, release: async () => {} };
    held.release = async () => {
      held.release = async () => {};
      await hold('ACTIVE');
    };
    try {
      return await this.followRollout(task, late, known, held);
    } finally {
      await held.release();
    }
  }

  private async followRollout(
    task: Task & { kind: 'rollout' },
    late: () => boolean,
    known: Set<string>,
    held: { until: number; release: () => Promise<void> },
  ): Promise<boolean> {
    let id: string | undefined;
    while (!id) {
      if (late()) return this.fail(task, 'rollout did not start');
      id = (await this.rolloutIds()).find((r) => !known.has(r));
      if (id) break;
      const r = await this.mutate(
        'startRollout',
        `input: { action: ${task.action}, nodes: ["${task.nodeId}", "${task.secondNodeId}"], restart: ${task.restart}, pauseOnFailure: false, reason: "campaign" }`,
        '... on Operation { id }',
      );
      this.started(r);
      if (r.__typename === 'Operation') id = r.id;
      else if (r.__typename !== 'ConflictError') return this.fail(task, `rollout refused: ${r.code} ${r.message}`);
      else await pause(300);
    }
    const restarted = new Set<string>();
    const unpaused = new Map<string, number>();
    for (;;) {
      const op = (
        await this.gql(`{ operation(id: "${id}") { ... on Operation { state error waitingOn { kind } rollout { nodes { nodeId phase blockers { id } } } } } }`)
      ).operation;
      if (op.waitingOn?.kind === 'BUDGET' || op.rollout?.nodes.some((n: any) => n.phase !== 'PENDING') || Date.now() > held.until) await held.release();
      if (op.state === 'PAUSED') {
        if (late()) return this.fail(task, `rollout ${id} stayed PAUSED`);
        await this.unpause(id, op.rollout?.nodes ?? [], unpaused);
        await pause(300);
        continue;
      }
      if (op.state !== 'RUNNING' && op.state !== 'CANCELLING') {
        if (op.state === 'SUCCEEDED') return true;
        return this.fail(task, `rollout ${id} ended ${op.state} (${op.error})`);
      }
      if (late()) return this.fail(task, `rollout ${id} stayed ${op.state}`);
      for (const n of op.rollout?.nodes ?? []) {
        if (n.phase === 'WAITING_FOR_CONFIRM') {
          // Said again after a kill until the rollout has it (a repeat while RETURNING is refused, an answer).
          await this.mutate('continueRollout', `id: "${id}", nodeId: "${n.nodeId}", reason: "campaign: restarted"`, '');
          continue;
        }
        // Each node once, when the rollout waits for its restart; then its re-attach (neon:L3) is waited for.
        if (n.phase !== 'WAITING_FOR_RESTART' || restarted.has(n.nodeId)) continue;
        restarted.add(n.nodeId);
        if (this.restartNode) await this.restartNode(n.nodeId);
        else await this.gql(`mutation { simulation { restartNode(nodeId: "${n.nodeId}") { __typename } } }`);
      }
      await pause(300);
    }
  }

  /**
   * A rollout PAUSED, though the campaign starts it with `pauseOnFailure: false`: the safety gate
   * pauses whatever that says (rollout:O6) when a node's drain or maintenance left workloads that
   * would lose service, e.g. a cut-over a transient fault failed before its generation (the shard
   * stays attached to the origin, neon:W4). A paused rollout waits for a person; the campaign
   * answers as the careful operator of rollout:scenario-3 does: it moves each blocking shard to its
   * secondary, then resumes (the gate looks again). A blocker it cannot move (a VM, or a shard still
   * there after three tries) is restarted past with the override for the paused node alone
   * (rollout:O12).
   */
  private async unpause(id: string, nodes: { nodeId: string; phase: string; blockers: { id: string }[] }[], tries: Map<string, number>): Promise<void> {
    let unsafe = false;
    for (const n of nodes.filter((x) => x.phase === 'UNSAFE_TO_RESTART')) {
      const tried = (tries.get(n.nodeId) ?? 0) + 1;
      tries.set(n.nodeId, tried);
      for (const b of n.blockers) {
        const shard = (await this.gql(`{ s: shard(id: "${b.id}") { __typename ... on TenantShard { attachedNodeId secondaryNodeIds } } }`)).s;
        const to = shard.__typename === 'TenantShard' && shard.attachedNodeId === n.nodeId ? shard.secondaryNodeIds[0] : undefined;
        if (shard.__typename === 'TenantShard' && shard.attachedNodeId !== n.nodeId) continue;
        if (!to || tried > 3) {
          unsafe = true;
          continue;
        }
        const r = await this.mutate(
          'migrateShard',
          `shardId: "${b.id}", nodeId: "${to}", prewarm: false, reason: "campaign: blocks the restart of node ${n.nodeId}"`,
          '... on ShardMigration { operation { id } }',
        );
        if (r.operation) this.ledger.startedOperations.add(r.operation.id);
        this.log(`  rollout ${id} paused on node ${n.nodeId}: move of ${b.id} to node ${to}: ${r.__typename}${r.code ? ` ${r.code} ${r.message}` : ''}`);
      }
    }
    const r = await this.mutate('resumeRollout', `id: "${id}"${unsafe ? ', allowUnsafeRestart: true' : ''}, reason: "campaign"`, '');
    this.log(`  rollout ${id} resumed${unsafe ? ' with allowUnsafeRestart' : ''}: ${r.__typename}${r.code ? ` ${r.code} ${r.message}` : ''}`);
  }

  /** Runs one task to its end; resolves false (and says why) when it cannot be done or does not end by `deadline`. */
  async run(task: Task, deadline: number): Promise<boolean> {
    const { nodeId } = task;
    const late = () => Date.now() > deadline;
    if (task.kind === 'rollout') return this.rollout(task, late);
    if (task.kind === 'maintain') {
      // Enable, unless a previous (unanswered) request already did.
      for (let n = await this.node(nodeId); n.phase === null; n = await this.node(nodeId)) {
        if (late()) return this.fail(task, 'enable did not take');
        if (n.running.length) {
          await pause(300);
          continue;
        }
        const r = await this.mutate('enableMaintenanceMode', `nodeId: "${nodeId}", reason: "campaign"`, '... on Operation { id }');
        this.started(r);
        if (r.__typename !== 'Operation' && r.code !== 'ALREADY_IN_MAINTENANCE') return this.fail(task, `enable refused: ${r.code} ${r.message}`);
      }
      for (let n = await this.node(nodeId); n.phase !== 'COMPLETED' && n.phase !== 'ERROR' && n.phase !== null; n = await this.node(nodeId)) {
        if (late()) return this.fail(task, `maintenance stayed ${n.phase}`);
        await pause(300);
      }
      // Disable (or clear an error, vm:M5) until the node is out of maintenance; a lost answer is found out by looking.
      for (let n = await this.node(nodeId); n.phase !== null; n = await this.node(nodeId)) {
        if (late()) return this.fail(task, `disable did not take (phase ${n.phase})`);
        if (n.phase === 'ERROR') {
          await this.mutate('clearMaintenanceError', `nodeId: "${nodeId}"`, '... on ClusterNode { id }');
          continue;
        }
        const r = await this.mutate(
          'disableMaintenanceMode',
          `nodeId: "${nodeId}"`,
          '... on DisableMaintenanceResult { fillOperation { id } failures { vmId message } }',
        );
        if (r.__typename === 'DisableMaintenanceResult') {
          if (r.fillOperation) this.ledger.startedOperations.add(r.fillOperation.id);
          for (const f of r.failures) {
            this.ledger.namedFailures.add(f.vmId);
            this.log(`  vm:D2 failure named: ${f.vmId}: ${f.message}`);
          }
        }
      }
    } else {
      for (let n = await this.node(nodeId); n.policy === 'ACTIVE' && n.running.length === 0; n = await this.node(nodeId)) {
        if (late()) return this.fail(task, 'drain did not start');
        const r = await this.mutate('startNodeDrain', `nodeId: "${nodeId}", reason: "campaign"`, '... on Operation { id }');
        this.started(r);
        if (r.__typename === 'Operation') break;
        // CONFLICT: a drain an unanswered request started already runs (the look above raced its start).
        if (r.code !== 'CONFLICT') return this.fail(task, `drain refused: ${r.code} ${r.message}`);
      }
      // The cycle an operator runs: drain, restart the node (its re-attach makes it ACTIVE again,
      // neon:L3; here the restart is said with configureNode, so that the node's VMs are left
      // alone), then fill (neon:E2: a fill needs ACTIVE).
      let filled = false;
      let restarted = false;
      for (let n = await this.node(nodeId); !filled || n.policy !== 'ACTIVE' || n.running.length; n = await this.node(nodeId)) {
        if (late()) return this.fail(task, `drain/fill did not end (policy ${n.policy})`);
        if (n.running.length) {
          await pause(300);
          continue;
        }
        if (n.policy !== 'ACTIVE' && this.restartNode) {
          // Once; then its re-attach (neon:L3) is waited for.
          if (!restarted) await this.restartNode(nodeId);
          restarted = true;
          await pause(300);
          continue;
        }
        if (n.policy !== 'ACTIVE') {
          const r = await this.mutate('configureNode', `nodeId: "${nodeId}", policy: ACTIVE, reason: "campaign: restarted"`, '');
          if (r.__typename !== 'ClusterNode') return this.fail(task, `configureNode refused: ${r.code} ${r.message}`);
          continue;
        }
        if (n.availability !== null && n.availability !== 'ACTIVE') {
          // A restarted pageserver is WARMING_UP until its first good heartbeat; a fill needs it ACTIVE (neon:E2).
          await pause(300);
          continue;
        }
        const r = await this.mutate('startNodeFill', `nodeId: "${nodeId}", reason: "campaign"`, '... on Operation { id }');
        this.started(r);
        if (r.__typename !== 'Operation' && r.code !== 'CONFLICT') return this.fail(task, `fill refused: ${r.code} ${r.message}`);
        filled = r.__typename === 'Operation';
      }
    }
    return true;
  }

  /** Waits until nothing runs and no VM is between states. */
  async quiesce(deadline: number): Promise<boolean> {
    for (;;) {
      const data = await this.gql(`{ operations(first: 1, states: [RUNNING, CANCELLING]) { totalCount } vms(first: 1000) { edges { node { status } } } }`);
      const moving = data.vms.edges.filter((e: any) => e.node.status !== 'RUNNING' && e.node.status !== 'STOPPED').length;
      if (data.operations.totalCount === 0 && moving === 0) return true;
      if (Date.now() > deadline) return false;
      await pause(300);
    }
  }

  private fail(task: Task, why: string): false {
    this.log(`  task ${task.kind}(node ${task.nodeId}) not done: ${why}`);
    return false;
  }
}
