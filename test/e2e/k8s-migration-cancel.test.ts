import { afterEach, describe, expect, it } from 'vitest';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../plugins/kubevirt/index.ts';
import { EVACUATION_ANNOTATION, MIGRATION_JOB_LABEL, type K8sObject, type K8sSim } from '../../simulators/kubernetes/index.ts';
import { eventually, kubevirtApp, type KubevirtTestApp } from '../support/kubevirt-app.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import { drive } from '../support/virtual-drive.ts';

/** k8s:scenario-5 through GraphQL: Lockkeeper cancels its own migrations, and only those (k8s:C1–C5, k8s:C9). */
let t: KubevirtTestApp;
afterEach(async () => {
  await t?.stop();
});

async function gql(query: string) {
  const res = await t.gql(query);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data;
}
const phase = () => t.app.maintenance.stateOf('n1')?.phase ?? null;
const DISABLE = `mutation { r: disableMaintenanceMode(nodeId: "n1") { __typename
  ... on DisableMaintenanceResult { cancelledMigrations { vmId migration nodeId } node { cordoned } } ... on Error { message } } }`;
const migrationsOf = (name: string) => t.sim.migrations('default').filter((m) => m.spec?.vmiName === name);
const deletes = () => t.sim.calls.filter((c) => c.resource === 'virtualmachineinstancemigrations' && c.verb === 'delete');

function nodes(sim: K8sSim): void {
  for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
}

describe('k8s:scenario-5: migration cancel', () => {
  it("disable during EVACUATING deletes only Lockkeeper's Pending VMIM: it ends Failed with migrationAbortRequested, target pod gone, VM on the source; KubeVirt's evacuation VMIM stays", async () => {
    t = await kubevirtApp((sim) => {
      nodes(sim);
      sim.addVm({ name: 'a', nodeName: 'n1' });
      sim.addVm({ name: 'b', nodeName: 'n1' });
      // Every migration stays Pending (its target pod unschedulable, as far as anyone can tell).
      sim.holdMigrations({ pending: () => true });
      sim.controller.createMigration('default', 'b', { generateName: 'kubevirt-evacuation-', annotations: { [EVACUATION_ANNOTATION]: 'n1' } });
    });
    await gql(`mutation { enableMaintenanceMode(nodeId: "n1") { __typename } }`);
    await eventually(() => phase() === 'EVACUATING' && migrationsOf('a').length === 1);
    const [ours] = migrationsOf('a');
    const [evacuation] = migrationsOf('b');
    expect(ours!.metadata.labels).toMatchObject({ [MANAGED_BY_LABEL]: MANAGED_BY, 'kubevirt.io/vmi-name': 'a' });
    expect(ours!.metadata.finalizers).toEqual(['kubevirt.io/migrationJobFinalize']);
    // k8s:C5: b's migration was joined, not doubled.
    expect(migrationsOf('b')).toHaveLength(1);
    await eventually(() => t.sim.store.list(t.sim.def('pods')).some((p) => p.metadata.labels?.[MIGRATION_JOB_LABEL] === ours!.metadata.uid));
    const history: K8sObject[] = [];
    t.sim.store.subscribe((e) => {
      if (e.object.metadata.uid === ours!.metadata.uid) history.push(structuredClone(e.object));
    });

    const result = (await gql(DISABLE)).r;
    expect(result).toMatchObject({ __typename: 'DisableMaintenanceResult', node: { cordoned: false } });
    expect(result.cancelledMigrations).toEqual([{ vmId: 'default/a', migration: `default/${ours!.metadata.name}`, nodeId: 'n1' }]);
    // Only ours was deleted; it went through Failed with the abort condition, then its finalizer went and so did it.
    expect(deletes().map((c) => c.name)).toEqual([ours!.metadata.name]);
    const failed = history.find((m) => m.status?.phase === 'Failed');
    expect(failed?.status.conditions).toEqual(expect.arrayContaining([{ type: 'migrationAbortRequested', status: 'True' }]));
    expect(history.at(-1)?.metadata.deletionTimestamp).toBeDefined();
    expect(migrationsOf('a')).toEqual([]);
    expect(t.sim.store.list(t.sim.def('pods')).filter((p) => p.metadata.labels?.[MIGRATION_JOB_LABEL] === ours!.metadata.uid)).toEqual([]);
    expect(t.sim.vmi('default', 'a')!.status.nodeName).toBe('n1');
    // k8s:C2: a FailedMigration event says it was canceled.
    expect(t.sim.store.list(t.sim.def('events'), 'default').some((e) => e.reason === 'FailedMigration' && String(e.message).includes('canceled'))).toBe(true);
    // k8s:C9 (c), k8s:C6: KubeVirt's evacuation migration is left alone.
    expect(migrationsOf('b')).toEqual([expect.objectContaining({ metadata: expect.objectContaining({ uid: evacuation!.metadata.uid }) })]);
    expect(migrationsOf('b')[0]!.metadata.deletionTimestamp).toBeUndefined();
    // k8s:C7: Lockkeeper writes none of Harvester's migration annotations.
    for (const v of ['a', 'b'])
      expect(Object.keys(t.sim.vmi('default', v)!.metadata.annotations ?? {}).filter((k) => k.startsWith('harvesterhci.io/migration'))).toEqual([]);
  });

  it('a Running cancel whose abort ends Failed (the migration won the race) reports the VM on the target', async () => {
    t = await kubevirtApp((sim) => {
      nodes(sim);
      sim.addVm({ name: 'a', nodeName: 'n1' });
      sim.holdMigrations({ running: () => true, abortOutcome: 'Failed' });
    });
    await gql(`mutation { enableMaintenanceMode(nodeId: "n1") { __typename } }`);
    await eventually(() => migrationsOf('a')[0]?.status?.phase === 'Running');
    const target = migrationsOf('a')[0]!.status.migrationState.targetNode;
    const result = (await gql(DISABLE)).r;
    expect(result.cancelledMigrations).toEqual([expect.objectContaining({ vmId: 'default/a', nodeId: target })]);
    expect(target).not.toBe('n1');
    expect(t.sim.vmi('default', 'a')!.status.nodeName).toBe(target);
    expect(t.sim.vmi('default', 'a')!.status.migrationState).toMatchObject({ abortRequested: true, abortStatus: 'Failed', completed: true });
  });

  it('a migration past migrationTimeoutMs is deleted and reported Transient', async () => {
    const clock = new VirtualClock();
    t = await kubevirtApp(
      (sim) => {
        nodes(sim);
        sim.addVm({ name: 'a', nodeName: 'n1' });
        sim.holdMigrations({ pending: () => true });
      },
      { migrationRetryDelayMs: 60_000 },
      {},
      { clock, plugin: { vmActionTimeoutMs: 3_600_000, migrationTimeoutMs: 30_000 } },
    );
    const op = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1") { ... on Operation { id } } }`)).r;
    await drive(clock, () => migrationsOf('a').length === 1);
    const first = migrationsOf('a')[0]!;
    await drive(clock, () => deletes().length === 1, { stepMs: 1000 });
    expect(deletes()[0]!.name).toBe(first.metadata.name);
    const created = t.sim.calls.find((c) => c.resource === 'virtualmachineinstancemigrations' && c.verb === 'create')!.at;
    expect(deletes()[0]!.at - created).toBeGreaterThanOrEqual(30_000);
    await eventually(() => !migrationsOf('a').some((m) => m.metadata.uid === first.metadata.uid));
    const step = async () =>
      (await gql(`{ operation(id: "${op.id}") { ... on Operation { steps(first: 5) { edges { node { workloadId state error } } } } } }`)).operation.steps
        .edges[0].node;
    await eventually(async () => ((await step()).error ?? '').includes('cancelled'));
    const s = await step();
    expect(s).toMatchObject({ workloadId: 'default/a', state: 'MOVING' });
    expect(s.error).toMatch(/not done after 30000 ms: migration default\/a-lockkeeper-\w+ cancelled \(deleted\); VM default\/a is on node n1/);
  });
});
