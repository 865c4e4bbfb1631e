import { afterEach, describe, expect, it } from 'vitest';
import { createKubevirtBackend, type KubevirtBackend } from '../../../plugins/kubevirt/index.ts';
import { K8sSim } from '../../../simulators/kubernetes/index.ts';
import { checkSchemas, schemaError, VALIDATED_KINDS } from '../../support/k8s-schemas.ts';

/** The simulator and the plugin against kubernetes-models' schemas (generated from Kubernetes' OpenAPI). */
let sim: K8sSim;
let backend: KubevirtBackend | null = null;
afterEach(async () => {
  await backend?.close();
  backend = null;
  await sim?.close();
});

describe('kubernetes-models schema checks', () => {
  it('are installed for every simulator (vitest setup) and bite on an object a real API server would reject', async () => {
    expect(K8sSim.instrument).toBeTypeOf('function');
    expect(schemaError({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 7 }] } })).toMatch(
      /image must be string/,
    );
    expect(schemaError({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'p' }, deleteOptions: { gracePeriodSeconds: '180' } })).toMatch(
      /gracePeriodSeconds/,
    );
    expect(schemaError({ apiVersion: 'v1', kind: 'PodList', items: [{ metadata: { name: 'p' }, spec: { containers: 'no' } }] })).toMatch(/PodList item/);
    // A simulator outside the shared check (its violation is made on purpose), with a check of its own.
    const shared = K8sSim.instrument;
    K8sSim.instrument = null;
    try {
      sim = await K8sSim.start();
    } finally {
      K8sSim.instrument = shared;
    }
    const own = checkSchemas(sim);
    sim.store.create(sim.def('pods'), { metadata: { name: 'bad', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 1 }] } });
    expect(own.join('\n')).toMatch(/stored \(ADDED\): v1\/Pod bad: .*image must be string/);
  });

  it('every kind the simulator serves from the core, apps, policy and apiextensions groups is one the check knows', async () => {
    sim = await K8sSim.start();
    const served = sim.store.resources
      .filter((r) => ['', 'apps', 'policy', 'apiextensions.k8s.io'].includes(r.group))
      .map((r) => `${r.group ? `${r.group}/` : ''}${r.version}/${r.kind}`);
    for (const kind of served) expect(VALIDATED_KINDS, kind).toContain(kind);
  });

  it("seeded objects, the controllers' writes and the plugin's evictions all pass", async () => {
    sim = await K8sSim.start({ msPerGraceSecond: 1 });
    const seen = checkSchemas(sim);
    const sent: string[] = [];
    const before = sim.api.onExchange!;
    sim.api.onExchange = (x) => {
      before(x);
      if (x.subresource === 'eviction') sent.push(JSON.stringify(x.request));
    };
    sim.addNode('n1');
    sim.addNode('n2');
    sim.addPod({ name: 'web', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'web-rs' }, labels: { app: 'web' } });
    sim.addPod({ name: 'ds', nodeName: 'n1', owner: { kind: 'DaemonSet', name: 'agent' }, labels: { app: 'agent' } });
    sim.addPod({ name: 'db-0', nodeName: 'n1', owner: { kind: 'StatefulSet', name: 'db' }, labels: { app: 'db' }, emptyDir: true });
    sim.addPdb('default', 'web', { matchLabels: { app: 'web' }, maxUnavailable: 1 });
    sim.addVm({ name: 'vm', nodeName: 'n1' });
    backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile() });
    const pods = await backend.podDrain.listNodePods('n1', '');
    expect(pods.map((p) => p.name).sort()).toEqual(expect.arrayContaining(['db-0', 'ds', 'web']));
    expect(await backend.podDrain.evictPod({ namespace: 'default', name: 'web' }, 180)).toEqual({ kind: 'EVICTED' });
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!)).toEqual({
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: 'web', namespace: 'default' },
      deleteOptions: { gracePeriodSeconds: 180 },
    });
    expect(seen).toEqual([]);
  });
});
