import { afterEach, describe, expect, it } from 'vitest';
import type { K8sSim } from '../../simulators/kubernetes/index.ts';
import { shardIdOf } from '../../simulators/pageserver/index.ts';
import { hyperconvergedApp, SHARD_ON_N1, type HyperconvergedApp } from '../support/hyperconverged-app.ts';
import type { KubevirtTestApp } from '../support/kubevirt-app.ts';
import type { SimCluster } from '../support/pageserver-cluster.ts';

/**
 * Hyperconverged hosts (issue 26 points 3 and 4): each pageserver runs on a Kubernetes node
 * (`pageservers[].kubernetesNode`), so one node carries VMs, pods and shards. One virtual
 * clock for the Kubernetes simulator, the pageservers, both plugins and the engine.
 */
let h: HyperconvergedApp | undefined;
let t: KubevirtTestApp | undefined;
let c: SimCluster | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
  t = undefined;
  c = undefined;
});

const SHARD = SHARD_ON_N1;
const SHARD_TENANT = shardIdOf(SHARD);

function seed(sim: K8sSim): void {
  sim.addVm({ name: 'web', nodeName: 'n1', evictionStrategy: 'LiveMigrate' });
  sim.addPod({ name: 'api-1', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'api' }, labels: { app: 'api' } });
  sim.addPod({ name: 'agent-n1', nodeName: 'n1', owner: { kind: 'DaemonSet', name: 'agent' }, labels: { app: 'agent' } });
}

async function hyperconverged(): Promise<HyperconvergedApp> {
  h = await hyperconvergedApp(seed);
  ({ t, c } = h);
  return h;
}

const gql = async (query: string) => {
  const res = await t!.gql(query);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data;
};

describe('hyperconverged hosts: a pageserver on each Kubernetes node', () => {
  it('each host is one node under its Kubernetes name, with both sides, carrying the VM, the pods and the shard', async () => {
    await hyperconverged();
    const nodes = (await gql('{ nodes { edges { node { id } } } }')).nodes.edges.map((e: { node: { id: string } }) => e.node.id);
    expect(nodes).toEqual(['n1', 'n2', 'n3']);
    const n1 = (await gql('{ node(id: "n1") { ... on ClusterNode { id name availability sides { backend availability } } } }')).node;
    expect(n1).toEqual({
      id: 'n1',
      name: 'n1',
      availability: 'ACTIVE',
      sides: [
        { backend: 'kubevirt', availability: 'ACTIVE' },
        { backend: 'pageserver', availability: 'ACTIVE' },
      ],
    });
    expect(await t!.served.listShards({ attachedNodeId: 'n1' })).toMatchObject([{ id: shardIdOf(SHARD), attachedNodeId: 'n1', secondaryNodeIds: ['n2'] }]);
    expect(t!.served.nodeAliases?.external('n1')).toBe('1');
  });

  it('safeToRestart is false on a host with a VM, a pod and a shard, naming each (the DaemonSet pod does not count)', async () => {
    await hyperconverged();
    const n1 = (await gql('{ node(id: "n1") { ... on ClusterNode { safeToRestart remainingWorkloads { id kind reason } } } }')).node;
    expect(n1.safeToRestart).toBe(false);
    expect(n1.remainingWorkloads.map((w: { id: string; kind: string; reason: string }) => `${w.kind} ${w.id} ${w.reason}`).sort()).toEqual([
      'POD default/api-1 POD_EVICTABLE',
      `SHARD ${shardIdOf(SHARD)} NOT_CUT_OVER`,
      'VM default/web VM_RUNNING',
    ]);
  });

  it("the Neon REST facade keeps the pageservers' integer node ids", async () => {
    await hyperconverged();
    const { port } = await t!.app.start(0, '127.0.0.1');
    const get = async (path: string) => (await fetch(`http://127.0.0.1:${port}${path}`)).json();
    expect((await get('/control/v1/node')).map((n: { id: number }) => n.id)).toEqual([1, 2, 3]);
    expect((await get('/control/v1/node/1')).id).toBe(1);
    expect((await get('/control/v1/node/1/shards')).node_id).toBe(1);
    const tenant = await get(`/control/v1/tenant/${SHARD_TENANT}`);
    expect(tenant.shards[0]).toMatchObject({ node_attached: 1, node_secondary: [2] });
  });

  it('maintenance of a host moves its VM, evicts its pods and moves its shard before COMPLETED; the DaemonSet pod stays', async () => {
    const { drive } = await hyperconverged();
    const op = (await gql('mutation { r: enableMaintenanceMode(nodeId: "n1") { __typename ... on Operation { id } ... on Error { message } } }')).r;
    expect(op.__typename).toBe('Operation');
    await drive(() => t!.app.maintenance.stateOf('n1')?.phase === 'COMPLETED', 'maintenance COMPLETED');
    expect(t!.sim.vmi('default', 'web')!.status.nodeName).not.toBe('n1');
    // k8s:K1/K2: the DaemonSet pod and the VM's old launcher pod may stay; nothing else.
    expect(
      t!.sim
        .podsOn('n1')
        .filter((p) => p.metadata.labels?.['kubevirt.io'] !== 'virt-launcher')
        .map((p) => p.metadata.name),
    ).toEqual(['agent-n1']);
    const shard = await t!.served.getShard(shardIdOf(SHARD));
    expect(shard?.attachedNodeId).not.toBe('n1');
    expect(t!.sim.node('n1')?.metadata.annotations?.['harvesterhci.io/maintain-status']).toBe('completed');
  });

  it('a pageserver that stops answering fails its shard over (neon:H5) while its Kubernetes node stays Ready; the node shows both sides', async () => {
    const { drive } = await hyperconverged();
    c!.sim(1).stopAnswering();
    await drive(async () => (await t!.served.getShard(shardIdOf(SHARD)))?.attachedNodeId === 'n2', 'shard failed over to n2');
    const n1 = await t!.served.getNode('n1');
    expect(n1?.sides).toEqual([
      { backend: 'kubevirt', availability: 'ACTIVE' },
      { backend: 'pageserver', availability: 'OFFLINE', servesShards: true },
    ]);
    expect(n1?.availability).toBe('OFFLINE');
    // No Kubernetes node-down step: the node is Ready, its VM and pods untouched.
    expect(t!.sim.vmi('default', 'web')!.status.nodeName).toBe('n1');
    expect(
      t!.sim
        .podsOn('n1')
        .filter((p) => p.metadata.labels?.['kubevirt.io'] !== 'virt-launcher')
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(['agent-n1', 'api-1']);
  });

  it('a Kubernetes node NotReady does not fail the shard over while its pageserver still answers', async () => {
    const { drive } = await hyperconverged();
    t!.sim.setNodeReady('n1', false);
    await drive(async () => (await t!.served.getNode('n1'))?.sides?.[0]?.availability === 'OFFLINE', 'kubernetes side OFFLINE');
    // A minute of heartbeats, far past the pageserver's offline interval: no FAILOVER, the shard stays attached on n1.
    await c!.advance(60_000);
    expect((await t!.served.getShard(shardIdOf(SHARD)))?.attachedNodeId).toBe('n1');
    expect((await t!.served.getNode('n1'))?.sides).toEqual([
      { backend: 'kubevirt', availability: 'OFFLINE' },
      { backend: 'pageserver', availability: 'ACTIVE', servesShards: true },
    ]);
    const kinds = (await gql('{ operations(first: 20) { edges { node { kind } } } }')).operations.edges.map((e: { node: { kind: string } }) => e.node.kind);
    expect(kinds).not.toContain('FAILOVER');
  });
});
