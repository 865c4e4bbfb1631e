/**
 * neon:W10 and neon:W11 end to end: a tenant's config stored in the gateway's database,
 * sent in every location_config (heatmap_period made HA-aware), read back from the
 * simulated pageservers after each kind of move and across a gateway restart; Neon's
 * tenant config routes on the REST facade; the GraphQL mutation and field; unknown configs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import { createLogger } from '../../src/logger.ts';
import { buildApp } from '../../src/server.ts';
import { shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { pageserverWorlds, restartAndWaitActive, restClient, settled, start, THREE_NODES, type World } from '../support/pageserver-e2e.ts';

const { setUp } = pageserverWorlds(afterEach);

const TENANT = { tenant: 5, attached: 1, secondaries: [2] } satisfies SimShardSpec;
const ID = shardIdOf(TENANT);
const TENANT_ID = ID.slice(0, 32);
const OTHERS: SimShardSpec[] = [
  { tenant: 6, attached: 2, secondaries: [3] },
  { tenant: 7, attached: 3, secondaries: [1] },
];
const OWN = { pitr_interval: '7days', compaction_threshold: 12 };
/** What every location must hold: the tenant's own config with heatmap_period made HA-aware (Attached(1)). */
const AT_REST = { ...OWN, heatmap_period: '1m' };

/** The tenant config of every location the simulated pageservers hold for the shard. */
function heldConfigs(w: World, shardId: string): Record<string, unknown>[] {
  return [1, 2, 3].map((n) => w.cluster.sim(n).tenantConf(shardId)).filter((c): c is Record<string, unknown> => c !== null);
}

async function expectKept(w: World, what: string) {
  const held = heldConfigs(w, ID);
  expect(held.length, what).toBeGreaterThanOrEqual(2);
  for (const c of held) expect(c, what).toEqual(AT_REST);
}

describe('neon:W10 — a tenant config kept through every move', { timeout: 300_000 }, () => {
  it('a PITR override and a compaction setting survive a drain, a fill, a failover, a migrate and a gateway restart, read back from the pageservers', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [TENANT, ...OTHERS] });
    const call = await restClient(w);
    expect(await call('PUT', '/v1/tenant/config', { tenant_id: TENANT_ID, ...OWN })).toEqual({ status: 200, json: null });
    const sorted = (c: Record<string, unknown>) => JSON.stringify(Object.entries(c).sort());
    await w.cluster.until(() => heldConfigs(w, ID).every((c) => sorted(c) === sorted(AT_REST)), { what: 'config sent' });
    await expectKept(w, 'after PUT');
    expect((await call('GET', `/v1/tenant/${TENANT_ID}/config`)).json).toEqual({ tenant_specific_overrides: OWN, effective_config: OWN });

    // Drain node 1 (the attached node), restart it, fill it.
    expect((await start(w, 'startNodeDrain', '1')).__typename).toBe('Operation');
    expect((await settled(w, '1')).state).toBe('SUCCEEDED');
    await expectKept(w, 'after the drain');
    await restartAndWaitActive(w, '1');
    expect((await start(w, 'startNodeFill', '1')).__typename).toBe('Operation');
    expect((await settled(w, '1')).state).toBe('SUCCEEDED');
    await expectKept(w, 'after the fill');

    // A failover of the attached node (it stops answering), then its restart.
    const attached = (await w.backend.getShard(ID))!.attachedNodeId;
    w.cluster.sim(Number(attached)).stopAnswering();
    await w.cluster.until(async () => (await w.backend.getShard(ID))!.attachedNodeId !== attached && w.app.failover.activeFailover(attached) === null, {
      what: 'failover',
      stepMs: 500,
    });
    await w.cluster.advance(25_000, 500);
    await expectKept(w, 'after the failover');
    await restartAndWaitActive(w, attached);
    await w.cluster.advance(25_000, 500);
    await expectKept(w, 'after the lost node came back');

    // A migrate (immediate) to the node that holds nothing of it.
    const now = (await w.backend.getShard(ID))!;
    const empty = ['1', '2', '3'].find((n) => n !== now.attachedNodeId && !now.secondaryNodeIds.includes(n))!;
    const migrated = await call('PUT', `/control/v1/tenant/${ID}/migrate`, {
      node_id: Number(empty),
      migration_config: { prewarm: false, override_scheduler: true },
    });
    expect(migrated.status).toBe(200);
    await w.cluster.advance(25_000, 500);
    expect((await w.backend.getShard(ID))!.attachedNodeId).toBe(empty);
    await expectKept(w, 'after the migrate');

    // A gateway restart: the config is read from the database, and the next move sends it.
    await w.app.stop();
    await w.backend.close();
    const backend = await w.cluster.startController();
    const app = buildApp({
      backend,
      log: createLogger('silent'),
      prisma: w.cluster.db.prisma,
      hotPath: w.cluster.db.hotPath,
      clock: w.cluster.clock,
      config: DEFAULT_CONFIG,
    });
    await w.cluster.drive(app.ready());
    try {
      const again: World = { ...w, backend, app };
      const call2 = await restClient(again);
      expect((await call2('GET', `/v1/tenant/${TENANT_ID}/config`)).json).toEqual({ tenant_specific_overrides: OWN, effective_config: OWN });
      const here = (await backend.getShard(ID))!;
      const back = await call2('PUT', `/control/v1/tenant/${ID}/migrate`, {
        node_id: Number(here.secondaryNodeIds[0]),
        migration_config: { prewarm: false, override_scheduler: true },
      });
      expect(back.status).toBe(200);
      await w.cluster.advance(25_000, 500);
      await expectKept(again, 'after a move by the restarted gateway');
    } finally {
      await app.stop();
    }
  });

  it('PATCH with Neon’s field rules (null removes, absent kept), 404 for an unknown tenant, 400 for an unknown field; audited; Attached(0) clears heatmap_period', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [TENANT, { tenant: 8, attached: 3, secondaries: [] }] });
    const call = await restClient(w);
    expect((await call('PUT', '/v1/tenant/config', { tenant_id: TENANT_ID, ...OWN, gc_period: '1h' })).status).toBe(200);
    expect((await call('PATCH', '/v1/tenant/config', { tenant_id: TENANT_ID, gc_period: null, compaction_threshold: 20 })).status).toBe(200);
    const want = { pitr_interval: '7days', compaction_threshold: 20 };
    expect((await call('GET', `/v1/tenant/${TENANT_ID}/config`)).json).toEqual({ tenant_specific_overrides: want, effective_config: want });
    await w.cluster.advance(1_000);
    for (const c of heldConfigs(w, ID)) expect(c).toEqual({ ...want, heatmap_period: '1m' });
    // A tenant without secondaries (Attached(0)): no heatmap_period, even one the tenant set.
    const lone = shardIdOf({ tenant: 8, attached: 3, secondaries: [] });
    expect((await call('PUT', '/v1/tenant/config', { tenant_id: lone.slice(0, 32), heatmap_period: '30s', gc_horizon: 1024 })).status).toBe(200);
    await w.cluster.advance(1_000);
    expect(w.cluster.sim(3).tenantConf(lone)).toEqual({ gc_horizon: 1024 });
    expect((await call('GET', `/v1/tenant/${lone.slice(0, 32)}/config`)).json.tenant_specific_overrides).toEqual({ gc_horizon: 1024, heatmap_period: '30s' });

    const unknownTenant = 'f'.repeat(32);
    expect(await call('PUT', '/v1/tenant/config', { tenant_id: unknownTenant, gc_horizon: 1 })).toEqual({
      status: 404,
      json: { msg: expect.stringMatching(/^NotFound: tenant f{32} not found/) },
    });
    expect((await call('GET', `/v1/tenant/${unknownTenant}/config`)).status).toBe(404);
    const bad = await call('PUT', '/v1/tenant/config', { tenant_id: TENANT_ID, no_such_field: 1 });
    expect(bad.status).toBe(400);
    expect(bad.json.msg).toMatch(/no_such_field/);
    const wrongType = await call('PATCH', '/v1/tenant/config', { tenant_id: TENANT_ID, pitr_interval: 7 });
    expect(wrongType.status).toBe(400);
    // Nothing of the refused calls was stored.
    expect((await call('GET', `/v1/tenant/${TENANT_ID}/config`)).json.tenant_specific_overrides).toEqual(want);
    const audit = await w.cluster.db.prisma.auditEntry.findMany({ orderBy: { id: 'asc' } });
    expect(audit.map((a) => [a.action, a.outcome])).toEqual(
      expect.arrayContaining([
        ['PUT /v1/tenant/config', 'OK'],
        ['PATCH /v1/tenant/config', 'OK'],
      ]),
    );
  });

  it('GraphQL: setTenantConfig (REPLACE, PATCH) and tenantConfig; an unknown field is INVALID_INPUT naming it', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [TENANT] });
    const set = await w.gql(
      `mutation { r: setTenantConfig(tenantId: "${TENANT_ID}", config: {pitr_interval: "7days", gc_horizon: 5}) { __typename ... on TenantConfigResult { config } ... on Error { code message } } }`,
    );
    expect(set.r).toEqual({ __typename: 'TenantConfigResult', config: { gc_horizon: 5, pitr_interval: '7days' } });
    const patched = await w.gql(
      `mutation { r: setTenantConfig(tenantId: "${TENANT_ID}", mode: PATCH, config: {gc_horizon: null}) { __typename ... on TenantConfigResult { config } } }`,
    );
    expect(patched.r.config).toEqual({ pitr_interval: '7days' });
    const read = await w.gql(`{ tenantConfig(tenantId: "${TENANT_ID}") { __typename ... on TenantConfigResult { tenantId config } } }`);
    expect(read.tenantConfig).toEqual({ __typename: 'TenantConfigResult', tenantId: TENANT_ID, config: { pitr_interval: '7days' } });
    const refused = await w.gql(
      `mutation { r: setTenantConfig(tenantId: "${TENANT_ID}", config: {bogus: 1}) { __typename ... on InvalidInputError { field code } } }`,
    );
    expect(refused.r).toEqual({ __typename: 'InvalidInputError', field: 'config.bogus', code: 'INVALID_INPUT' });
  });
});
