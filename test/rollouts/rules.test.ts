import { afterEach, describe, expect, it } from 'vitest';
import { driveUntil } from '../operations/drive.ts';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import type { ClusterEventListener } from '../../src/cluster/types.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { control, driveRollout, rolloutApp, run, startRollout, stateOf, twoZoneCluster } from './harness.ts';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

/** Three nodes, shards only: a drain of one moves its shards to the others' warm secondaries. */
function storageCluster(extra: { noSecondaryOn?: string[] } = {}) {
  const nodes = ['1', '2', '3'].map((id) => ({ id, roles: ['storage'] }));
  const shards = Array.from({ length: 6 }, (_, i) => ({
    tenantId: `t${i}`,
    attachedNodeId: String((i % 3) + 1),
    // t0, t1, t2 are attached to nodes 1, 2, 3: the named nodes' one has no secondary.
    secondaries: extra.noSecondaryOn?.includes(String((i % 3) + 1)) && i < 3 ? [] : [{ nodeId: String(((i + 1) % 3) + 1) }],
  }));
  return { nodes, shards };
}

/** A backend action takes simulated time: move the clock until it is done. */
async function drivenCall(t: TestApp, call: Promise<unknown>) {
  let done = false;
  void call.finally(() => (done = true));
  await driveUntil(t, () => done);
  await call;
}

async function events(t: TestApp, operationId: string) {
  await t.app.operations.journal.flush();
  return t.db.prisma.event.findMany({ where: { operationId }, orderBy: { seq: 'asc' } });
}

describe('admission (rollout:O2)', () => {
  it('refuses in the spec order with typed errors, and the rollout has no node and does not count toward maxConcurrentOperations', async () => {
    t = await rolloutApp(twoZoneCluster(), { settings: { maxConcurrentOperations: 2 } });
    expect(await startRollout(t, 'nodes: ["1", "nope", "nix"], action: MAINTENANCE')).toMatchObject({ __typename: 'NotFoundError', id: 'nope, nix' });
    expect(await startRollout(t, 'nodes: [], action: MAINTENANCE, maxUnavailable: 0')).toMatchObject({ __typename: 'NotFoundError' });
    expect(await startRollout(t, 'selector: { zones: ["zone-z"] }, action: MAINTENANCE')).toMatchObject({ __typename: 'NotFoundError' });
    expect(await startRollout(t, 'nodes: ["1"], selector: { zones: ["zone-a"] }, action: MAINTENANCE')).toMatchObject({
      __typename: 'InvalidInputError',
      field: 'nodes',
    });

    const drain = await t.gql('mutation { startNodeDrain(nodeId: "2") { ... on Operation { id } } }');
    // A node in an operation comes before a bad budget.
    expect(await startRollout(t, 'nodes: ["1", "2"], action: MAINTENANCE, maxUnavailable: 0')).toMatchObject({
      __typename: 'ConflictError',
      operationId: drain.data.startNodeDrain.id,
    });
    expect(await startRollout(t, 'nodes: ["1"], action: MAINTENANCE, maxUnavailable: 0')).toMatchObject({
      __typename: 'InvalidInputError',
      field: 'maxUnavailable',
    });
    const overLimit = await startRollout(t, 'nodes: ["1"], action: MAINTENANCE, maxUnavailable: 3');
    expect(overLimit).toMatchObject({ __typename: 'InvalidInputError', field: 'maxUnavailable' });
    expect(overLimit.message).toContain('operations.maxConcurrentOperations (2)');
    await driveUntil(t, () => t!.app.storage.activeOperation('2') === null);
    await t.gql('mutation { configureNode(nodeId: "2", policy: ACTIVE) { __typename } }');

    const first = await startRollout(t, 'nodes: ["3"], action: MAINTENANCE, restart: NONE');
    expect(first).toMatchObject({ __typename: 'Operation', kind: 'ROLLOUT', nodeId: null });
    // A node in a rollout conflicts; then one rollout at a time.
    expect(await startRollout(t, 'nodes: ["3"], action: MAINTENANCE')).toMatchObject({ __typename: 'ConflictError', operationId: first.id });
    expect(await startRollout(t, 'nodes: ["4"], action: MAINTENANCE')).toMatchObject({ __typename: 'ConflictError', operationId: first.id });
    // The node step counts toward the limit of 2, the rollout does not: one more operation fits.
    const other = await t.gql('mutation { startNodeDrain(nodeId: "1") { __typename } }');
    expect(other.data.startNodeDrain.__typename).toBe('Operation');
    const third = await t.gql('mutation { startNodeDrain(nodeId: "4") { __typename ... on OperationLimitReachedError { limit } } }');
    expect(third.data.startNodeDrain).toEqual({ __typename: 'OperationLimitReachedError', limit: 2 });
  });

  it('refuses a budget the quorum cannot give', async () => {
    const cp = ['control-plane', 'worker'];
    t = await rolloutApp({ nodes: ['1', '2', '3'].map((id) => ({ id, roles: cp })), vms: [] }, { settings: { maxConcurrentOperations: 3 } });
    const refused = await startRollout(t, 'nodes: ["1", "2"], action: MAINTENANCE, maxUnavailable: 2');
    expect(refused).toMatchObject({ __typename: 'InvalidInputError', field: 'maxUnavailable' });
    expect(refused.message).toContain('quorum allows (1)');
  });
});

describe('the plan (rollout:O3)', () => {
  it('answers the order, the waves and each node’s own plan, changing nothing', async () => {
    t = await rolloutApp(twoZoneCluster(), { settings: { maxConcurrentOperations: 2 } });
    const res = await t.gql(`{ rolloutPlan(input: { selector: { roles: ["worker"] }, action: MAINTENANCE, order: ZONE_BY_ZONE, maxUnavailable: 2 }) {
      ... on RolloutPlan { order waves { number nodeIds } nodes { nodeId wave maintenance { accepted vms { vmId action } shards { shardId action } } drain { shardId } } } } }`);
    const plan = res.data.rolloutPlan;
    expect(plan.order).toEqual(['1', '2', '3', '4']);
    expect(plan.waves).toEqual([
      { number: 1, nodeIds: ['1', '2'] },
      { number: 2, nodeIds: ['3', '4'] },
    ]);
    expect(plan.nodes[0]).toMatchObject({ nodeId: '1', wave: 1, maintenance: { accepted: true }, drain: null });
    expect(plan.nodes[0].maintenance.vms.map((v: any) => v.vmId)).toEqual(['prod/vm-1-0', 'prod/vm-1-1']);
    expect(plan.nodes[0].maintenance.shards.length).toBeGreaterThan(0);
    const drainPlan = await t.gql(
      '{ rolloutPlan(input: { nodes: ["2"], action: DRAIN_FILL }) { ... on RolloutPlan { nodes { drain { shardId action toNodeId } } } } }',
    );
    expect(drainPlan.data.rolloutPlan.nodes[0].drain.every((s: any) => s.action === 'CUT_OVER')).toBe(true);
    expect(await t.app.operations.listOperations()).toEqual([]);
    expect(await t.db.prisma.event.count({ where: { type: { startsWith: 'OPERATION' } } })).toBe(0);
  });
});

describe('running (rollout:O4–O8, rollout:O10, rollout:O11)', () => {
  it('rollout:O5 a wave waits while another node is out of service for any reason, naming it', async () => {
    t = await rolloutApp(storageCluster());
    await drivenCall(t, t.cluster.cordonNode('3'));
    const r = await startRollout(t, 'nodes: ["1", "2"], action: DRAIN_FILL, restart: NONE');
    await driveUntil(t, () => run(t!, r.id).snapshot.waitingOn?.kind === 'BUDGET');
    expect(run(t, r.id).snapshot.waitingOn).toMatchObject({ kind: 'BUDGET', workloadIds: ['3'], description: 'budget of 1 node(s) used by node-3 (cordoned)' });
    expect(await t.app.operations.listOperations({ kind: 'DRAIN' })).toEqual([]);
    await drivenCall(t, t.cluster.uncordonNode('3'));
    expect(await driveRollout(t, r.id, ['SUCCEEDED', 'FAILED', 'PAUSED'])).toMatchObject({ state: 'SUCCEEDED' });
  });

  it('rollout:O6 a node that would leave a shard without service is not restarted: the rollout pauses naming it; allowUnsafeRestart overrides, recorded in the audit', async () => {
    t = await rolloutApp(storageCluster({ noSecondaryOn: ['1'] }));
    const r = await startRollout(t, 'nodes: ["1"], action: DRAIN_FILL, reason: "patch"');
    await driveRollout(t, r.id, ['PAUSED', 'SUCCEEDED', 'FAILED']);
    const paused = await t.app.operations.getOperation(r.id);
    expect(paused).toMatchObject({ state: 'PAUSED', waitingOn: { kind: 'PAUSED' } });
    expect(paused!.waitingOn!.description).toContain('t0 (still attached to node 1 with no secondary to take over)');
    expect(run(t, r.id).details.get('1')).toMatchObject({ phase: 'UNSAFE_TO_RESTART', blockers: [{ id: 't0' }] });
    // Resuming without the override pauses again at the gate; with it, the node is handed over.
    await control(t, 'resumeRollout', `id: "${r.id}"`);
    await driveRollout(t, r.id, ['PAUSED'], { restart: false });
    expect(await control(t, 'resumeRollout', `id: "${r.id}", allowUnsafeRestart: true, reason: "t0 may go down"`)).toMatchObject({ state: 'RUNNING' });
    expect(await driveRollout(t, r.id, ['SUCCEEDED', 'FAILED', 'PAUSED'])).toMatchObject({ state: 'SUCCEEDED' });
    const audit = await t.db.prisma.auditEntry.findMany({ where: { action: 'rolloutUnsafeRestart' } });
    expect(audit).toHaveLength(1);
    expect(JSON.parse(audit[0]!.arguments)).toMatchObject({ rollout: r.id, nodeId: '1', blockers: [{ id: 't0' }] });
  });

  describe('rollout:O12 an override covers what it names', () => {
    /** Nodes 1 and 2 each hold a shard with no secondary (t0, t1): both are unsafe to restart after their drain. */
    const twoUnsafe = () => storageCluster({ noSecondaryOn: ['1', '2'] });
    const nodeEvents = async (t: TestApp, id: string, type: string) => (await events(t, id)).filter((e) => e.type === type).map((e) => e.nodeId);
    const unsafeAudit = async (t: TestApp) =>
      (await t.db.prisma.auditEntry.findMany({ where: { action: 'rolloutUnsafeRestart' }, orderBy: { at: 'asc' } })).map((a) => ({
        actor: a.actor,
        nodeId: a.nodeId,
        reason: a.reason,
        blockers: (JSON.parse(a.arguments) as { blockers: { id: string }[] }).blockers.map((b) => b.id),
      }));
    const overrides = async (t: TestApp, id: string) => {
      const res = await t.gql(`{ operation(id: "${id}") { ... on Operation { rollout { nodes { nodeId allowUnsafeRestart } } } } }`);
      return Object.fromEntries(res.data.operation.rollout.nodes.map((n: any) => [n.nodeId, n.allowUnsafeRestart]));
    };

    it('allowUnsafeRestart on resumeRollout covers the node the rollout paused on, not the next one; each use is an event and an audit entry', async () => {
      t = await rolloutApp(twoUnsafe());
      const r = await startRollout(t, 'nodes: ["1", "2"], action: DRAIN_FILL');
      expect(await driveRollout(t, r.id, ['PAUSED', 'SUCCEEDED', 'FAILED'])).toMatchObject({ state: 'PAUSED' });
      expect(run(t, r.id).details.get('1')!.phase).toBe('UNSAFE_TO_RESTART');
      expect(await control(t, 'resumeRollout', `id: "${r.id}", allowUnsafeRestart: true, reason: "t0 may go down"`)).toMatchObject({ state: 'RUNNING' });
      expect(await overrides(t, r.id)).toEqual({ '1': true, '2': false });
      // Node 1 is restarted; node 2, unsafe too, is held at the gate and pauses the rollout again.
      const paused = await driveRollout(t, r.id, ['PAUSED', 'SUCCEEDED', 'FAILED']);
      expect(paused).toMatchObject({ state: 'PAUSED' });
      expect(paused!.waitingOn!.description).toContain('node-2: not restarted: t1 (still attached to node 2 with no secondary to take over)');
      expect(run(t, r.id).details.get('1')!.phase).toBe('DONE');
      expect(run(t, r.id).details.get('2')!.phase).toBe('UNSAFE_TO_RESTART');
      expect(await nodeEvents(t, r.id, 'ROLLOUT_NODE_UNSAFE_TO_RESTART')).toEqual(['1', '2']);
      expect(await nodeEvents(t, r.id, 'ROLLOUT_NODE_UNSAFE_RESTART')).toEqual(['1']);
      expect(await unsafeAudit(t)).toEqual([{ actor: 'anonymous', nodeId: '1', reason: 't0 may go down', blockers: ['t0'] }]);
      // A second override for the node now paused on covers it.
      expect(await control(t, 'resumeRollout', `id: "${r.id}", allowUnsafeRestart: true, reason: "t1 too"`)).toMatchObject({ state: 'RUNNING' });
      expect(await driveRollout(t, r.id, ['PAUSED', 'SUCCEEDED', 'FAILED'])).toMatchObject({ state: 'SUCCEEDED' });
      expect(await nodeEvents(t, r.id, 'ROLLOUT_NODE_UNSAFE_RESTART')).toEqual(['1', '2']);
      expect(await unsafeAudit(t)).toEqual([
        { actor: 'anonymous', nodeId: '1', reason: 't0 may go down', blockers: ['t0'] },
        { actor: 'anonymous', nodeId: '2', reason: 't1 too', blockers: ['t1'] },
      ]);
      const use = (await events(t, r.id)).find((e) => e.type === 'ROLLOUT_NODE_UNSAFE_RESTART' && e.nodeId === '2')!;
      expect(JSON.parse(use.payload)).toMatchObject({ node: '2', blockers: [{ id: 't1' }], allowedBy: 'anonymous', allowedReason: 't1 too' });
    });

    it('allowUnsafeRestartNodes on resumeRollout covers the nodes named, later ones included, and no other', async () => {
      t = await rolloutApp(storageCluster({ noSecondaryOn: ['1', '2', '3'] }));
      const r = await startRollout(t, 'nodes: ["1", "2", "3"], action: DRAIN_FILL');
      await driveRollout(t, r.id, ['PAUSED', 'SUCCEEDED', 'FAILED']);
      expect(await control(t, 'resumeRollout', `id: "${r.id}", allowUnsafeRestartNodes: ["1", "2"]`)).toMatchObject({ state: 'RUNNING' });
      expect(await overrides(t, r.id)).toEqual({ '1': true, '2': true, '3': false });
      expect(await driveRollout(t, r.id, ['PAUSED', 'SUCCEEDED', 'FAILED'])).toMatchObject({ state: 'PAUSED' });
      expect(run(t, r.id).details.get('3')!.phase).toBe('UNSAFE_TO_RESTART');
      expect((await unsafeAudit(t)).map((a) => a.nodeId)).toEqual(['1', '2']);
      expect(await nodeEvents(t, r.id, 'ROLLOUT_NODE_UNSAFE_RESTART_ALLOWED')).toEqual(['1', '2']);
    });

    it('on startRollout the override is recorded per node in the plan: every node, or the nodes named', async () => {
      t = await rolloutApp(twoUnsafe());
      const plan = await t.gql(
        '{ rolloutPlan(input: { nodes: ["1", "2"], action: DRAIN_FILL, allowUnsafeRestartNodes: ["2"] }) { ... on RolloutPlan { nodes { nodeId allowUnsafeRestart } } } }',
      );
      expect(plan.data.rolloutPlan.nodes).toEqual([
        { nodeId: '1', allowUnsafeRestart: false },
        { nodeId: '2', allowUnsafeRestart: true },
      ]);
      const all = await t.gql(
        '{ rolloutPlan(input: { nodes: ["1", "2"], action: DRAIN_FILL, allowUnsafeRestart: true }) { ... on RolloutPlan { nodes { nodeId allowUnsafeRestart } } } }',
      );
      expect(all.data.rolloutPlan.nodes).toEqual([
        { nodeId: '1', allowUnsafeRestart: true },
        { nodeId: '2', allowUnsafeRestart: true },
      ]);
      const r = await startRollout(t, 'nodes: ["1", "2"], action: DRAIN_FILL, allowUnsafeRestartNodes: ["2"], reason: "t1 is scratch"');
      expect(await overrides(t, r.id)).toEqual({ '1': false, '2': true });
      expect(await driveRollout(t, r.id, ['PAUSED', 'SUCCEEDED', 'FAILED'])).toMatchObject({ state: 'PAUSED' });
      expect(run(t, r.id).details.get('1')!.phase).toBe('UNSAFE_TO_RESTART');
      expect(await control(t, 'resumeRollout', `id: "${r.id}", allowUnsafeRestart: true, reason: "t0 may go down"`)).toMatchObject({ state: 'RUNNING' });
      // Node 2 was covered from the start: no second pause.
      expect(await driveRollout(t, r.id, ['PAUSED', 'SUCCEEDED', 'FAILED'])).toMatchObject({ state: 'SUCCEEDED' });
      expect(await unsafeAudit(t)).toEqual([
        { actor: 'anonymous', nodeId: '1', reason: 't0 may go down', blockers: ['t0'] },
        { actor: 'anonymous', nodeId: '2', reason: 't1 is scratch', blockers: ['t1'] },
      ]);
    });

    it('refuses an override that names no node of the rollout, or that would cover nothing, with typed errors and nothing recorded', async () => {
      t = await rolloutApp(twoUnsafe());
      const refusedStart = await t.gql(
        'mutation { r: startRollout(input: { nodes: ["1"], action: DRAIN_FILL, allowUnsafeRestartNodes: ["2"] }) { __typename ... on InvalidInputError { field value message } } }',
      );
      expect(refusedStart.data.r).toEqual({
        __typename: 'InvalidInputError',
        field: 'allowUnsafeRestartNodes',
        value: '2',
        message: expect.stringContaining('not a node of this rollout: 2'),
      });
      const r = await startRollout(t, 'nodes: ["1", "2"], action: DRAIN_FILL, restart: CONFIRM');
      await control(t, 'pauseRollout', `id: "${r.id}"`);
      // Paused by a person, on no node: the override would be kept for whatever comes next.
      expect(await control(t, 'resumeRollout', `id: "${r.id}", allowUnsafeRestart: true`)).toMatchObject({
        __typename: 'InvalidInputError',
        message: expect.stringContaining('is not paused on a node'),
      });
      expect(await control(t, 'resumeRollout', `id: "${r.id}", allowUnsafeRestartNodes: ["9"]`)).toMatchObject({
        __typename: 'InvalidInputError',
        message: expect.stringContaining('not a node of rollout'),
      });
      expect(await stateOf(t, r.id)).toBe('PAUSED');
      expect(await overrides(t, r.id)).toEqual({ '1': false, '2': false });
    });

    it('a rollout recorded before per-node overrides keeps its recorded scope across the upgrade', async () => {
      const a = await rolloutApp(twoUnsafe());
      t = a;
      const r = await startRollout(a, 'nodes: ["1", "2"], action: DRAIN_FILL');
      await driveRollout(a, r.id, ['PAUSED', 'SUCCEEDED', 'FAILED']);
      await a.app.operations.shutdown();
      // As the previous version left it after resumeRollout(allowUnsafeRestart: true): the flag on
      // the rollout's settings, RUNNING, and node details without an override of their own.
      const op = await a.db.prisma.operation.findUniqueOrThrow({ where: { id: r.id } });
      const params = JSON.parse(op.params);
      params.settings.allowUnsafeRestart = true;
      params.pause = null;
      await a.db.prisma.operation.update({ where: { id: r.id }, data: { params: JSON.stringify(params), state: 'RUNNING' } });
      for (const step of await a.db.prisma.operationStep.findMany({ where: { operationId: r.id } })) {
        const { unsafeRestartAllowed, ...legacy } = JSON.parse(step.detail!);
        expect(unsafeRestartAllowed).toBeNull();
        await a.db.prisma.operationStep.update({ where: { id: step.id }, data: { detail: JSON.stringify(legacy) } });
      }
      const b = await rolloutApp(twoUnsafe(), { clock: a.clock, databaseFile: a.db.file, backend: () => a.cluster });
      t = b;
      expect(await overrides(b, r.id)).toEqual({ '1': true, '2': true });
      expect(await driveRollout(b, r.id, ['SUCCEEDED', 'FAILED', 'PAUSED'], { cluster: a.cluster })).toMatchObject({ state: 'SUCCEEDED' });
      expect((await unsafeAudit(b)).map((x) => x.nodeId)).toEqual(['1', '2']);
      await a.db.close();
    });
  });

  it('rollout:O7 an outage without a restart is not "returned"; the re-attach is, and the next wave waits for the fill and settleSeconds', async () => {
    t = await rolloutApp(storageCluster());
    const r = await startRollout(t, 'nodes: ["1", "2"], action: DRAIN_FILL, settleSeconds: 60');
    await driveUntil(t, () => run(t!, r.id).details.get('1')!.phase === 'WAITING_FOR_RESTART');
    await t.cluster.simulation.setNodeOnline('1', false);
    await t.clock.advance(1000);
    await t.cluster.simulation.setNodeOnline('1', true);
    await t.clock.advance(10_000);
    expect(run(t, r.id).details.get('1')!.phase).toBe('WAITING_FOR_RESTART');
    expect(run(t, r.id).snapshot.waitingOn!.description).toMatch(/^node-1: waiting for re-attach since \d\d:\d\d:\d\d$/);
    await t.cluster.simulation.restartNode('1');
    await driveUntil(t, () => run(t!, r.id).details.get('1')!.phase === 'SETTLING');
    const settling = run(t, r.id).details.get('1')!;
    expect(settling.operations.map((o) => o.kind)).toEqual(['DRAIN', 'FILL']);
    expect((await t.app.operations.getOperation(settling.operations[1]!.id))!.state).toBe('SUCCEEDED');
    await t.clock.advance(59_000);
    expect(run(t, r.id).details.get('2')!.phase).toBe('PENDING');
    await driveUntil(t, () => run(t!, r.id).details.get('2')!.phase !== 'PENDING');
    expect(await driveRollout(t, r.id, ['SUCCEEDED', 'FAILED', 'PAUSED'])).toMatchObject({ state: 'SUCCEEDED' });
  });

  it('rollout:O7 a boot id that changed counts as restarted, without any re-attach (a Kubernetes node’s bootID)', async () => {
    // The backend as Kubernetes would be: no nodeReattached events at all.
    const withoutReattach = (c: ClusterBackend): ClusterBackend =>
      new Proxy(c, {
        get: (target, key) => {
          if (key === 'watch') return (listener: ClusterEventListener) => target.watch((e) => e.type !== 'nodeReattached' && listener(e));
          const value = Reflect.get(target, key) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    t = await rolloutApp(storageCluster(), { backend: withoutReattach });
    const r = await startRollout(t, 'nodes: ["1"], action: DRAIN_FILL');
    await driveUntil(t, () => run(t!, r.id).details.get('1')!.phase === 'WAITING_FOR_RESTART');
    expect(run(t, r.id).details.get('1')!.bootBefore).toBe('1');
    await t.cluster.simulation.restartNode('1');
    await driveUntil(t, () => run(t!, r.id).details.get('1')!.phase !== 'WAITING_FOR_RESTART');
    expect((await t.cluster.getNode('1'))!.bootId).toBe('2');
    expect(run(t, r.id).details.get('1')!.reattachedAt).toBeNull();
    // The policy a drain left at PAUSE_FOR_RESTART (no re-attach moved it) goes back to ACTIVE for the fill.
    expect(await driveRollout(t, r.id, ['SUCCEEDED', 'FAILED', 'PAUSED'])).toMatchObject({ state: 'SUCCEEDED' });
  });

  it('rollout:O7 a re-attach no run heard (the gateway restarting) is read from the event log: the resumed rollout goes on, on a backend without boot ids', async () => {
    // As the pageserver backend: no boot ids, only re-attaches.
    const bootless = (c: ClusterBackend): ClusterBackend =>
      new Proxy(c, {
        get: (target, key) => {
          if (key === 'getNode') return async (id: string) => ({ ...(await target.getNode(id))!, bootId: null });
          if (key === 'listNodes') return async () => (await target.listNodes()).map((n) => ({ ...n, bootId: null }));
          const value = Reflect.get(target, key) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const a = await rolloutApp(storageCluster(), { backend: bootless });
    t = a;
    const r = await startRollout(a, 'nodes: ["1"], action: DRAIN_FILL');
    await driveUntil(a, () => run(a, r.id).details.get('1')!.phase === 'WAITING_FOR_RESTART');
    // The rollout's run stops hearing (its process is going away); the storage engine still answers the re-attach.
    run(a, r.id).halt();
    await a.cluster.simulation.restartNode('1');
    await driveUntil(a, () => a.app.storage.policyOf('1') === 'ACTIVE');
    await a.app.operations.shutdown();
    const stored = await a.app.operations.getSteps(r.id);
    expect(JSON.parse(stored[0]!.detail!)).toMatchObject({ phase: 'WAITING_FOR_RESTART', reattachedAt: null });
    const b = await rolloutApp(storageCluster(), { clock: a.clock, databaseFile: a.db.file, backend: () => bootless(a.cluster) });
    t = b;
    expect(await driveRollout(b, r.id, ['SUCCEEDED', 'FAILED', 'PAUSED'], { restart: false, maxMs: 600_000 })).toMatchObject({ state: 'SUCCEEDED' });
    await a.db.close();
  });

  it('rollout:O8 without pauseOnFailure a failed node is recorded and the rollout goes on, ending FAILED; events for each node step (rollout:O11)', async () => {
    const topo = twoZoneCluster();
    topo.vms!.push({ namespace: 'prod', name: 'pinned', nodeId: '2', liveMigratable: false, liveMigratableReason: 'HostDeviceNotLiveMigratable' });
    t = await rolloutApp(topo, { settings: { maxConcurrentOperations: 1 } });
    const r = await startRollout(t, 'nodes: ["1", "2", "3"], action: MAINTENANCE, restart: NONE, pauseOnFailure: false');
    const done = await driveRollout(t, r.id, ['SUCCEEDED', 'FAILED', 'PAUSED']);
    expect(done).toMatchObject({ state: 'FAILED', error: '1 node(s) failed: 2', counts: { moved: 2, failed: 1 } });
    const types = (await events(t, r.id)).map((e) => `${e.type}:${e.nodeId ?? ''}`);
    expect(types).toEqual(
      expect.arrayContaining([
        'ROLLOUT_NODE_STARTED:1',
        'ROLLOUT_NODE_FINISHED:1',
        'ROLLOUT_NODE_STARTED:2',
        'ROLLOUT_NODE_FAILED:2',
        'ROLLOUT_NODE_FINISHED:3',
        'OPERATION_FINISHED:',
      ]),
    );
    expect(types.indexOf('ROLLOUT_NODE_FAILED:2')).toBeLessThan(types.indexOf('ROLLOUT_NODE_STARTED:3'));
  });

  it('rollout:O8, rollout:O6: a maintenance that fails pauses the rollout naming what it left on the node', async () => {
    t = await rolloutApp(twoZoneCluster(), { settings: { maxConcurrentOperations: 1 } });
    // prod/vm-1-0 (strategy Migrate) never finishes its migration: the maintenance ends at its deadline.
    t.cluster.simulation.injectFaults({ stuck: ['prod/vm-1-0'] });
    const r = await startRollout(t, 'nodes: ["1", "2"], action: MAINTENANCE, restart: NONE');
    expect(await driveRollout(t, r.id, ['SUCCEEDED', 'FAILED', 'PAUSED'])).toMatchObject({ state: 'PAUSED' });
    const paused = (await events(t, r.id)).filter((e) => e.type === 'ROLLOUT_PAUSED');
    expect(paused).toHaveLength(1);
    const payload = JSON.parse(paused[0]!.payload) as { node: string; failure: string; blockers: { id: string; reasons: string[] }[] };
    expect(payload).toMatchObject({ node: '1', failure: expect.stringMatching(/^maintenance failed \(DEADLINE_EXCEEDED/) });
    expect(payload.blockers.map((b) => b.id)).toContain('prod/vm-1-0');
    expect(
      run(t, r.id)
        .details.get('1')!
        .blockers.map((b) => b.id),
    ).toContain('prod/vm-1-0');
  });

  it('rollout:O8 pause stops new node steps, resume goes on; CONFIRM waits for continueRollout; progress streams (rollout:O10)', async () => {
    t = await rolloutApp(storageCluster());
    const r = await startRollout(t, 'nodes: ["1", "2"], action: DRAIN_FILL, restart: CONFIRM');
    expect(await control(t, 'continueRollout', `id: "${r.id}", nodeId: "1"`)).toMatchObject({ __typename: 'PreconditionFailedError' });
    await driveUntil(t, () => run(t!, r.id).details.get('1')!.phase === 'WAITING_FOR_CONFIRM');
    expect(await control(t, 'pauseRollout', `id: "${r.id}", reason: "lunch"`)).toMatchObject({ state: 'PAUSED' });
    expect(await control(t, 'continueRollout', `id: "${r.id}", nodeId: "1"`)).toMatchObject({ state: 'PAUSED' });
    // Paused: node 1 is brought back (it was in flight), node 2 does not start.
    await driveUntil(t, () => run(t!, r.id).details.get('1')!.phase === 'DONE');
    await t.clock.advance(30_000);
    expect(run(t, r.id).details.get('2')!.phase).toBe('PENDING');
    const res = await t.gql(`{ operation(id: "${r.id}") { ... on Operation { state eta counts { moved total } waitingOn { kind description }
      rollout { currentWave nodesDone nodesTotal nodes { nodeId phase wave operations { kind state } } } } } }`);
    expect(res.data.operation).toMatchObject({
      state: 'PAUSED',
      eta: expect.any(String),
      counts: { moved: 1, total: 2 },
      waitingOn: { kind: 'PAUSED', description: 'paused by anonymous: lunch' },
      rollout: {
        currentWave: 2,
        nodesDone: 1,
        nodesTotal: 2,
        nodes: [
          {
            nodeId: '1',
            phase: 'DONE',
            operations: [
              { kind: 'DRAIN', state: 'SUCCEEDED' },
              { kind: 'FILL', state: 'SUCCEEDED' },
            ],
          },
          { nodeId: '2', phase: 'PENDING' },
        ],
      },
    });
    expect(await control(t, 'resumeRollout', `id: "${r.id}"`)).toMatchObject({ state: 'RUNNING' });
    await driveUntil(t, () => run(t!, r.id).details.get('2')!.phase === 'WAITING_FOR_CONFIRM');
    // Says since when once the run looked again (the pass that entered the phase says only what it waits for).
    await driveUntil(t, () => /^node-2: waiting for continueRollout since/.test(run(t!, r.id).snapshot.waitingOn?.description ?? ''), { maxMs: 60_000 });
    await control(t, 'continueRollout', `id: "${r.id}", nodeId: "2"`);
    expect(await driveRollout(t, r.id, ['SUCCEEDED', 'FAILED'], { restart: false })).toMatchObject({ state: 'SUCCEEDED' });
    const types = (await events(t, r.id)).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['ROLLOUT_PAUSED', 'ROLLOUT_RESUMED', 'ROLLOUT_NODE_AWAITING_CONFIRM', 'ROLLOUT_NODE_CONFIRMED']));
    expect(await control(t, 'pauseRollout', `id: "${r.id}"`)).toMatchObject({ __typename: 'NotFoundError' });
    expect(await stateOf(t, r.id)).toBe('SUCCEEDED');
  });
});
