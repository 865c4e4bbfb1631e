import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { printSchema } from 'graphql';
import { buildSchema } from '../../src/graphql/schema.ts';
import { printSchemaFile, SCHEMA_FILE } from '../../src/graphql/print.ts';
import { createTestApp } from '../support/graphql-app.ts';

describe('schema.graphql', () => {
  it('is up to date (run `npm run print-schema` after changing the schema)', () => {
    expect(readFileSync(SCHEMA_FILE, 'utf8')).toBe(printSchemaFile());
  });
});

describe('simulation controls', () => {
  it('are in the schema only when the backend is simulated', () => {
    const real = printSchema(buildSchema({ simulation: false }));
    const simulated = printSchema(buildSchema({ simulation: true }));
    expect(simulated).toMatch(/simulation: SimulationMutation!/);
    expect(real).not.toMatch(/simulation/i);
    // Everything else is the same schema.
    expect(real).toContain('type VirtualMachine');
    expect(real).toContain('nodeChanged');
  });

  it('a backend without simulation controls gets no simulation field', async () => {
    const t = await createTestApp({
      backend: (cluster) => new Proxy(cluster, { get: (target, prop, receiver) => (prop === 'simulation' ? undefined : Reflect.get(target, prop, receiver)) }),
    });
    const res = await t.gql('mutation { simulation { clearFaults { stuck } } }');
    // Until other mutations exist the Mutation type is absent altogether.
    expect(res.errors?.[0]?.message).toMatch(/Cannot query field "simulation"|not configured to execute mutation/);
    const q = await t.gql('{ simulation { faults { stuck } } }');
    expect(q.errors?.[0]?.message).toMatch(/Cannot query field "simulation"/);
    expect((await t.gql('{ nodes { totalCount } }')).data.nodes.totalCount).toBe(4);
    await t.app.stop();
  });

  it('drive the simulated cluster: latencies, faults, offline, secondary lag', async () => {
    const t = await createTestApp();
    const lat = await t.gql(
      'mutation { simulation { setLatencies(input: { migrate: 5, cutOver: 7 }) { ... on SimulationLatencies { migrate cutOver stop } } } }',
    );
    expect(lat.data.simulation.setLatencies).toEqual({ migrate: 5, cutOver: 7, stop: 400 });
    const faults = await t.gql(
      'mutation { simulation { injectFaults(input: { failureRate: { migrate: 0.5 }, stuck: ["apps/web-1"] }) { ... on SimulationFaults { failureRate { migrate stop } stuck } } } }',
    );
    expect(faults.data.simulation.injectFaults).toEqual({ failureRate: { migrate: 0.5, stop: 0 }, stuck: ['apps/web-1'] });
    expect((await t.gql('{ simulation { faults { stuck } latencies { cutOver } } }')).data.simulation).toEqual({
      faults: { stuck: ['apps/web-1'] },
      latencies: { cutOver: 7 },
    });
    expect((await t.gql('mutation { simulation { clearFaults { stuck } } }')).data.simulation.clearFaults.stuck).toEqual([]);
    // Out-of-range values are typed errors naming the field, and change nothing.
    const badRate = await t.gql(
      'mutation { simulation { injectFaults(input: { failureRate: { stop: 1.5 } }) { __typename ... on InvalidInputError { field value } } } }',
    );
    expect(badRate.data.simulation.injectFaults).toEqual({ __typename: 'InvalidInputError', field: 'input.failureRate.stop', value: '1.5' });
    const badLatency = await t.gql('mutation { simulation { setLatencies(input: { cordon: -1 }) { __typename ... on InvalidInputError { field } } } }');
    expect(badLatency.data.simulation.setLatencies).toEqual({ __typename: 'InvalidInputError', field: 'input.cordon' });
    expect(t.cluster.simulation.getLatencies().cordon).toBeGreaterThanOrEqual(0);
    expect(t.cluster.simulation.getFaults().failureRate.stop ?? 0).toBe(0);
    const off = await t.gql('mutation { simulation { setNodeOnline(nodeId: "3", online: false) { ... on ClusterNode { availability } } } }');
    expect(off.data.simulation.setNodeOnline.availability).toBe('OFFLINE');
    const missing = await t.gql('mutation { simulation { restartNode(nodeId: "99") { __typename ... on NotFoundError { kind id } } } }');
    expect(missing.data.simulation.restartNode).toEqual({ __typename: 'NotFoundError', kind: 'NODE', id: '99' });
    const shard = (await t.gql('{ shards(first: 1) { edges { node { id secondaryNodeIds } } } }')).data.shards.edges[0].node;
    const lag = await t.gql(
      `mutation { simulation { setSecondaryLag(shardId: "${shard.id}", nodeId: "${shard.secondaryNodeIds[0]}", lagBytes: 1000) { __typename } } }`,
    );
    expect(lag.data.simulation.setSecondaryLag.__typename).toBe('TenantShard');
    const status = await t.cluster.getSecondaryStatus(shard.id, shard.secondaryNodeIds[0]);
    expect(status.bytesTotal - status.bytesDownloaded).toBe(1000);
    await t.app.stop();
  });
});
