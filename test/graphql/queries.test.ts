import { afterEach, describe, expect, it } from 'vitest';
import { generateTopology } from '../../plugins/fake/index.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

describe('GraphQL reads over the demo cluster', () => {
  it('lists nodes with every field a script needs, filtered by zone and role', async () => {
    t = await createTestApp();
    const res = await t.gql(`{
      all: nodes { totalCount edges { node { id name zone roles availability cordoned controlPlane labels { key value } } } }
      zoneA: nodes(zone: "zone-a") { totalCount edges { node { zone } } }
      cp: nodes(role: "control-plane") { totalCount }
    }`);
    expect(res.errors).toBeUndefined();
    expect(res.data.all.totalCount).toBe(4);
    const nodes = res.data.all.edges.map((e: any) => e.node);
    expect(new Set(nodes.map((n: any) => n.zone)).size).toBe(2);
    expect(nodes.every((n: any) => n.availability === 'ACTIVE' && n.cordoned === false)).toBe(true);
    expect(res.data.cp.totalCount).toBe(3);
    expect(res.data.zoneA.edges.every((e: any) => e.node.zone === 'zone-a')).toBe(true);
    expect(res.data.zoneA.totalCount).toBeGreaterThan(0);
    expect(res.data.zoneA.totalCount).toBeLessThan(4);
  });

  it('lists VMs with strategy, migratability, volumes and placement, and filters them', async () => {
    t = await createTestApp();
    const res = await t.gql(`{
      vms(first: 100) { totalCount edges { node {
        id namespace name status runStrategy maintenanceStrategy maintenanceStrategyLabel maintenanceStrategyLabelValid
        liveMigratable liveMigratableReason node { id zone } volumes { name healthyReplicas replicas { nodeId healthy } }
        nodeSelector { key value } requiredNodeAffinity { matchExpressions { key operator values } } tracking { nodeName }
      } } }
      shutdown: vms(strategy: SHUTDOWN) { totalCount edges { node { maintenanceStrategy } } }
    }`);
    expect(res.errors).toBeUndefined();
    const vms = res.data.vms.edges.map((e: any) => e.node);
    expect(vms.length).toBe(res.data.vms.totalCount);
    expect(vms.length).toBeGreaterThanOrEqual(20);
    expect(new Set(vms.map((v: any) => v.maintenanceStrategy))).toEqual(
      new Set(['MIGRATE', 'SHUTDOWN_AND_RESTART_AFTER_ENABLE', 'SHUTDOWN_AND_RESTART_AFTER_DISABLE', 'SHUTDOWN']),
    );
    expect(vms.some((v: any) => !v.liveMigratable && v.liveMigratableReason)).toBe(true);
    expect(vms.filter((v: any) => v.status === 'Running'.toUpperCase()).every((v: any) => v.node?.id)).toBe(true);
    expect(res.data.shutdown.totalCount).toBeGreaterThan(0);
    expect(res.data.shutdown.edges.every((e: any) => e.node.maintenanceStrategy === 'SHUTDOWN')).toBe(true);

    const byNode = await t.gql(`{ vms(nodeId: "1", first: 100) { edges { node { node { id } } } } }`);
    expect(byNode.data.vms.edges.length).toBeGreaterThan(0);
    expect(byNode.data.vms.edges.every((e: any) => e.node.node.id === '1')).toBe(true);

    const byZone = await t.gql(`{ vms(zone: "zone-b", first: 100) { edges { node { node { zone } } } } }`);
    expect(byZone.data.vms.edges.length).toBeGreaterThan(0);
    expect(byZone.data.vms.edges.every((e: any) => e.node.node.zone === 'zone-b')).toBe(true);
  });

  it('lists shards with their attached node and secondaries', async () => {
    t = await createTestApp();
    const res = await t.gql(`{ shards(first: 100) { totalCount edges { node {
      id tenantId shardNumber shardCount attachedNode { id } secondaryNodes { id } highlyAvailable preferredZone policy
    } } } }`);
    expect(res.errors).toBeUndefined();
    expect(res.data.shards.totalCount).toBe(40);
    for (const { node: s } of res.data.shards.edges) {
      expect(s.secondaryNodes).toHaveLength(1);
      expect(s.secondaryNodes[0].id).not.toBe(s.attachedNode.id);
      expect(s.highlyAvailable).toBe(true);
    }
    const onNode = await t.gql(`{ shards(nodeId: "2", first: 100) { totalCount edges { node { attachedNodeId } } } }`);
    expect(onNode.data.shards.edges.every((e: any) => e.node.attachedNodeId === '2')).toBe(true);
  });

  it('pages with relay cursors and caps the page size', async () => {
    t = await createTestApp();
    const first = await t.gql(`{ vms(first: 5) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }`);
    expect(first.data.vms.edges).toHaveLength(5);
    expect(first.data.vms.pageInfo.hasNextPage).toBe(true);
    const next = await t.gql(`query($after: String) { vms(first: 5, after: $after) { edges { node { id } } pageInfo { hasPreviousPage } } }`, {
      after: first.data.vms.pageInfo.endCursor,
    });
    const ids = [...first.data.vms.edges, ...next.data.vms.edges].map((e: any) => e.node.id);
    expect(new Set(ids).size).toBe(10);
    expect(next.data.vms.pageInfo.hasPreviousPage).toBe(true);
    expect([...ids].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))).toEqual(ids);

    t = await createTestApp({ topology: generateTopology({ nodes: 2, vmsPerNode: 600 }) });
    const big = await t.gql(`{ vms(first: 5000) { totalCount edges { node { id } } } }`);
    expect(big.data.vms.totalCount).toBe(1200);
    expect(big.data.vms.edges).toHaveLength(1000);
  });

  it('answers unknown ids with a typed NotFound', async () => {
    t = await createTestApp();
    const res = await t.gql(`{
      node(id: "nope") { __typename ... on NotFoundError { kind id message code } }
      vm(id: "ns/nope") { __typename ... on NotFoundError { kind id } }
      shard(id: "nope") { __typename ... on Error { message } }
      known: node(id: "1") { __typename ... on ClusterNode { id } }
    }`);
    expect(res.errors).toBeUndefined();
    expect(res.data.node).toEqual({ __typename: 'NotFoundError', kind: 'NODE', id: 'nope', message: 'node nope not found', code: 'NOT_FOUND' });
    expect(res.data.vm).toEqual({ __typename: 'NotFoundError', kind: 'VM', id: 'ns/nope' });
    expect(res.data.shard.__typename).toBe('NotFoundError');
    expect(res.data.known).toEqual({ __typename: 'ClusterNode', id: '1' });
  });

  it('batches backend reads: 500 VMs with their nodes cost a bounded number of calls', async () => {
    for (const vmsPerNode of [25, 125]) {
      t = await createTestApp({ topology: generateTopology({ nodes: 4, vmsPerNode }) });
      const before = new Map(t.cluster.callCounts);
      const res = await t.gql(`{ vms(first: 1000) { totalCount edges { node { id node { name zone } volumes { replicas { node { name } } } } } } }`);
      expect(res.errors).toBeUndefined();
      expect(res.data.vms.totalCount).toBe(4 * vmsPerNode);
      const calls = [...t.cluster.callCounts.entries()].map(([name, n]) => [name, n - (before.get(name) ?? 0)] as const).filter(([, n]) => n > 0);
      const total = calls.reduce((sum, [, n]) => sum + n, 0);
      // One page of the list plus one batched node read, whether there are 100 VMs or 500.
      expect(Object.fromEntries(calls)).toEqual({ pageVms: 1, getNodes: 1 });
      expect(total).toBe(2);
      await t.stop();
    }
  });
});

describe('bad input', () => {
  it('malformed GraphQL is a standard error (200 for application/json, GraphQL over HTTP), and the server keeps answering', async () => {
    t = await createTestApp();
    const res = await t.app.yoga.fetch('http://lockkeeper.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ nodes { ' }),
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.errors[0].message).toMatch(/Syntax Error/);
    const unknownField = await t.app.yoga.fetch('http://lockkeeper.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ nodez }' }),
    });
    expect(unknownField.status).toBe(200);
    expect((await unknownField.json()).errors[0].message).toMatch(/Cannot query field "nodez"/);
    expect((await t.gql('{ nodes { totalCount } }')).data.nodes.totalCount).toBe(4);
  });

  it('masks unexpected faults', async () => {
    t = await createTestApp({
      backend: (cluster) =>
        new Proxy(cluster, {
          get: (target, prop, receiver) =>
            prop === 'listVms' || prop === 'pageVms' ? () => Promise.reject(new Error('secret internal detail')) : Reflect.get(target, prop, receiver),
        }),
    });
    const res = await t.gql('{ vms { totalCount } }');
    expect(res.errors?.[0]?.message).toBe('Unexpected error.');
    expect(JSON.stringify(res)).not.toContain('secret internal detail');
  });
});
