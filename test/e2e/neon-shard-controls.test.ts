import { afterEach, describe, expect, it } from 'vitest';
import { shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { pageserverWorlds, THREE_NODES, type World, restClient, callsTo } from '../support/pageserver-e2e.ts';
import { calls } from '../support/pageserver-cluster.ts';
import { parseHumantime } from '../../src/rest/neon-shapes.ts';

/**
 * Per-shard controls (neon:W1–W9) through GraphQL and the REST facade, on the pageserver
 * simulators, under the Decision "no optimiser": a prewarmed migration is an operation
 * of kind MIGRATE.
 */

const { setUp } = pageserverWorlds(afterEach);
const S: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2] };
const ID = shardIdOf(S);
const TENANT = ID.slice(0, 32);
const SHARD = 'id attachedNodeId secondaryNodeIds policy preferredZone pendingComputeNotification generation';

async function gqlMigrate(w: World, args: string) {
  const res = await w.cluster.drive(
    w.gql(
      `mutation { r: migrateShard(${args}) { __typename ... on ShardMigration { shard { ${SHARD} } operation { id kind state } } ... on Error { code message } } }`,
    ),
  );
  return res.r;
}

describe('neon:W1–W3 — migrate', { timeout: 240_000 }, () => {
  it('neon:W2: prewarm to a node without a secondary answers once the secondary exists; a MIGRATE operation waits until it is warm, cuts over and drops the extra secondary', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [S], downloadBytesPerSecond: 0 }, { settings: {} });
    const mark = w.cluster.log.entries.length;
    const r = await gqlMigrate(w, `shardId: "${ID}", nodeId: "3", overrideScheduler: true, reason: "rebalance"`);
    expect(r.__typename).toBe('ShardMigration');
    expect(r.shard).toMatchObject({ attachedNodeId: '1', secondaryNodeIds: ['2', '3'] });
    expect(r.operation).toMatchObject({ kind: 'MIGRATE', state: 'RUNNING' });
    expect(w.cluster.view()[ID]).toEqual({ '1': 'AttachedSingle@1', '2': 'Secondary@-', '3': 'Secondary@-' });
    await w.cluster.advance(10_000, 500);
    const op = await w.app.operations.getOperation(r.operation.id);
    expect(op?.waitingOn).toMatchObject({ kind: 'SECONDARY_WARMING' });
    expect(op?.waitingOn?.description).toMatch(/to warm up \(\d+ of \d+ bytes\)/);
    w.cluster.sim(3).setDownloadRate(1e12);
    await w.cluster.until(async () => (await w.app.operations.getOperation(r.operation.id))?.state === 'SUCCEEDED', { what: 'migration done' });
    expect(await w.backend.getShard(ID)).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['2'] });
    expect(w.cluster.view()[ID]).toEqual({ '2': 'Secondary@-', '3': 'AttachedSingle@2' });
    // neon:C15: prewarm keeps the old order: node 3's secondary is built (and warmed) while
    // node 1 is still AttachedSingle; only then does the cut-over make node 1 AttachedStale.
    expect(calls(w.cluster, mark).filter((l) => !l.includes('secondary/status'))).toEqual([
      'node 3 PUT /v1/tenant/:id/location_config Secondary@-',
      'node 1 PUT /v1/tenant/:id/location_config flush_ms=10000 AttachedStale@1',
      'node 1 GET /v1/tenant/:id/timeline',
      'node 3 POST /v1/tenant/:id/secondary/download wait_ms=20000',
      'node 3 PUT /v1/tenant/:id/location_config AttachedMulti@2',
      'node 3 POST /v1/tenant/:id/wait_lsn',
      'hook PUT /notify-attach nodes=3',
      'node 1 PUT /v1/tenant/:id/location_config Secondary@-',
      'node 3 PUT /v1/tenant/:id/location_config AttachedSingle@2',
      'node 1 PUT /v1/tenant/:id/location_config Detached@-',
    ]);
  });

  it('neon:W2: a target that already holds a warm secondary is cut over at once, no operation; neon:W1: migrating to the attached node moves nothing and cancels a pending migration', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [S] });
    const r = await gqlMigrate(w, `shardId: "${ID}", nodeId: "2"`);
    expect(r).toMatchObject({ __typename: 'ShardMigration', operation: null, shard: { attachedNodeId: '2', secondaryNodeIds: ['1'] } });
    expect(w.cluster.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@2' });
    // A slow prewarm to node 3, then a migrate to node 2 (where it is attached): the pending one is cancelled.
    w.cluster.sim(3).setDownloadRate(0);
    const pending = await gqlMigrate(w, `shardId: "${ID}", nodeId: "3", overrideScheduler: true`);
    expect(pending.operation.kind).toBe('MIGRATE');
    const again = await gqlMigrate(w, `shardId: "${ID}", nodeId: "2"`);
    expect(again).toMatchObject({ __typename: 'ShardMigration', operation: null, shard: { attachedNodeId: '2' } });
    await w.cluster.until(async () => (await w.app.operations.getOperation(pending.operation.id))?.state === 'CANCELLED', { what: 'cancelled' });
  });

  it('neon:W3: without prewarm the intent changes at once: the target attached, the old attached node its secondary (Attached(1)); a Stop shard changes intent only (neon:W4)', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [S] });
    const r = await gqlMigrate(w, `shardId: "${ID}", nodeId: "3", prewarm: false, overrideScheduler: true`);
    expect(r.shard).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['1'] });
    expect(w.cluster.view()[ID]).toEqual({ '1': 'Secondary@-', '3': 'AttachedSingle@2' });
    await w.gql(`mutation { setShardPolicy(tenantId: "${TENANT}", policy: STOP) { __typename } }`);
    const mark = w.cluster.log.entries.length;
    const stop = await gqlMigrate(w, `shardId: "${ID}", nodeId: "1", prewarm: false`);
    expect(stop.shard).toMatchObject({ attachedNodeId: '1', policy: 'STOP' });
    // neon:W8: a Stop shard gets no pageserver calls at all.
    expect(w.cluster.log.entries.slice(mark).filter((e) => e.path.includes(ID))).toEqual([]);
    expect(w.cluster.view()[ID]).toEqual({ '1': 'Secondary@-', '3': 'AttachedSingle@2' });
  });

  it('REST: 200 {}; humantime timeouts; Neon spelling', async () => {
    expect(parseHumantime('30s')).toBe(30_000);
    expect(parseHumantime('1m 30s')).toBe(90_000);
    expect(parseHumantime('250ms')).toBe(250);
    expect(parseHumantime('soon')).toBeNull();
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [S] });
    const call = await restClient(w);
    expect(
      await call('PUT', `/control/v1/tenant/${ID}/migrate`, {
        node_id: 2,
        migration_config: { prewarm: false, secondary_warmup_timeout: '30s', secondary_download_request_timeout: '5s' },
      }),
    ).toEqual({ status: 200, json: {} });
    expect(c8(w, 1)).toBe(true);
    expect((await call('PUT', `/control/v1/tenant/${ID}/migrate`, { node_id: 1, migration_config: { secondary_warmup_timeout: 'soon' } })).status).toBe(400);
  });
});

/** The origin was set Secondary (neon:C8) on node `n`. */
const c8 = (w: World, n: number) => w.cluster.log.find({ source: `node ${n}`, method: 'PUT' }).some((e) => (e.body as { mode?: string })?.mode === 'Secondary');

describe('neon:W5–W9', { timeout: 240_000 }, () => {
  it('neon:W5 migrate_secondary replaces every secondary by one; neon:W6 cancel_reconcile; neon:W9 preferred zones move nothing and show in the describe', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [S] });
    const call = await restClient(w);
    expect(await call('PUT', `/control/v1/tenant/${ID}/migrate_secondary`, { node_id: 3 })).toEqual({ status: 200, json: {} });
    expect(w.cluster.view()[ID]).toEqual({ '1': 'AttachedSingle@1', '3': 'Secondary@-' });
    // The attached node, or the only secondary: no change.
    expect(await call('PUT', `/control/v1/tenant/${ID}/migrate_secondary`, { node_id: 3 })).toEqual({ status: 200, json: {} });
    expect((await call('PUT', `/control/v1/tenant/${ID}/migrate_secondary`, { node_id: 9 })).status).toBe(400);
    expect(await call('PUT', `/control/v1/tenant/${ID}/cancel_reconcile`)).toEqual({ status: 200, json: null });
    expect((await call('PUT', `/control/v1/tenant/${'e'.repeat(32)}/cancel_reconcile`)).status).toBe(404);
    const mark = w.cluster.log.entries.length;
    expect(await call('PUT', '/control/v1/preferred_azs', { [ID]: 'az-b', ['e'.repeat(32)]: 'az-c' })).toEqual({ status: 200, json: { updated: [ID] } });
    expect(w.cluster.log.entries.slice(mark).filter((e) => e.method === 'PUT')).toEqual([]);
    const described = await call('GET', `/control/v1/tenant/${TENANT}`);
    expect(described.json.shards).toEqual([
      expect.objectContaining({
        tenant_shard_id: ID,
        node_attached: 1,
        node_secondary: [3],
        preferred_az_id: 'az-b',
        is_pending_compute_notification: false,
        scheduling_policy: 'Active',
      }),
    ]);
    const zoned = await w.gql(`mutation { setPreferredZone(shardIds: ["${ID}", "nope"], zone: null) { ... on PreferredZoneResult { updated } } }`);
    expect(zoned.setPreferredZone.updated).toEqual([ID]);
    expect((await w.backend.getShard(ID))?.preferredZone).toBeNull();
  });

  it('neon:W5: migrate_secondary to an OFFLINE node is accepted: the intent changes at once (its only secondary there), nothing is sent to it, and the secondary is made once the node is back', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [S] });
    const call = await restClient(w);
    w.cluster.sim(3).stopAnswering();
    await call('PUT', '/control/v1/node/3/config', { node_id: 3, availability: 'Offline' });
    expect((await call('GET', '/control/v1/node/3')).json.availability).toBe('Offline');
    const before = callsTo(w, 3).length;
    expect(await call('PUT', `/control/v1/tenant/${ID}/migrate_secondary`, { node_id: 3 })).toEqual({ status: 200, json: {} });
    expect(await w.backend.getShard(ID)).toMatchObject({ attachedNodeId: '1', secondaryNodeIds: ['3'] });
    expect(callsTo(w, 3, before)).toEqual([]);
    expect(w.cluster.view()[ID]?.['1']).toBe('AttachedSingle@1');
    w.cluster.sim(3).resume();
    await w.cluster.until(() => w.cluster.view()[ID]?.['3'] === 'Secondary@-', { what: 'the secondary on node 3', maxMs: 600_000 });
    await w.cluster.until(() => w.cluster.view()[ID]?.['2'] === undefined, { what: 'the old secondary dropped', maxMs: 600_000 });
  });

  it('neon:W7: a tenant policy persists first and reconciles each shard without waiting: Attached(2) adds a secondary; Detached is refused; unknown tenants 404', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [S] });
    const call = await restClient(w);
    expect(await call('PUT', `/control/v1/tenant/${TENANT}/policy`, { placement: { Attached: 2 }, scheduling: 'Essential' })).toEqual({
      status: 200,
      json: null,
    });
    expect((await w.backend.placement.describeShard(ID))?.secondaryCount).toBe(2);
    await w.cluster.until(() => w.cluster.view()[ID]?.['3'] === 'Secondary@-', { what: 'a second secondary' });
    expect(await w.backend.getShard(ID)).toMatchObject({ secondaryNodeIds: ['2', '3'], policy: 'ESSENTIAL' });
    expect(await call('PUT', `/control/v1/tenant/${TENANT}/policy`, { placement: 'Detached' })).toMatchObject({ status: 400 });
    expect((await call('PUT', `/control/v1/tenant/${'e'.repeat(32)}/policy`, { scheduling: 'Pause' })).status).toBe(404);
    const res = await w.gql(
      `mutation { setShardPolicy(tenantId: "${TENANT}", secondaryCount: 1) { ... on ShardPolicyResult { shards { secondaryNodeIds } } } }`,
    );
    expect(res.setShardPolicy.shards).toHaveLength(1);
    await w.cluster.until(() => w.cluster.view()[ID]?.['3'] === undefined, { what: 'the extra secondary dropped' });
  });
});
