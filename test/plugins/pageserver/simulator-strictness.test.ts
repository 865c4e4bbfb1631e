import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_TIMELINE_ID, formatShardId, LOCATION_CONFIG_HOLD_PATH, PageserverSim, SafetyChecker } from '../../../simulators/pageserver/index.ts';
import { until } from '../../support/child-server.ts';
import { neonSchemas } from '../../support/neon-schemas.ts';
import { takePageserverSchemaViolations } from '../../support/pageserver-schema-violations.ts';

/**
 * The pageserver simulator refuses what Neon's pageserver refuses (issue 11, "Simulators";
 * each refusal is listed in simulators/README.md): a plugin that passes against it does not
 * rely on a request the real pageserver would reject.
 */

const SHARD = formatShardId('a'.repeat(32), 0, 0);
const OTHER = formatShardId('c'.repeat(32), 0, 0);
const sims: PageserverSim[] = [];
afterEach(async () => {
  for (const s of sims.splice(0)) await s.close();
});

async function sim(): Promise<PageserverSim> {
  const s = await new PageserverSim({ nodeId: 1, safety: new SafetyChecker() }).start();
  sims.push(s);
  return s;
}

async function put(s: PageserverSim, shardId: string, body: Record<string, unknown>) {
  const res = await fetch(`${s.url}/v1/tenant/${shardId}/location_config`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tenant_conf: {}, ...body }),
  });
  return { status: res.status, json: (await res.json()) as unknown };
}

async function waitLsn(s: PageserverSim, shardId: string) {
  const res = await fetch(`${s.url}/v1/tenant/${shardId}/wait_lsn`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ [DEFAULT_TIMELINE_ID]: '0/1', timeout: { secs: 0, nanos: 0 } }),
  });
  return { status: res.status, json: (await res.json()) as unknown };
}

describe('the pageserver simulator is strict as Neon', () => {
  it('a location_config with a generation below one seen for the shard is refused (stale generation), and so is an attached mode without one', async () => {
    const s = await sim();
    expect((await put(s, SHARD, { mode: 'AttachedSingle', generation: 5 })).status).toBe(200);
    expect(await put(s, SHARD, { mode: 'AttachedSingle', generation: 4 })).toEqual({
      status: 400,
      json: { msg: 'Bad request: Generation 4 is less than existing 5' },
    });
    // Not even after the shard was detached: the pageserver remembers the highest generation.
    expect((await put(s, SHARD, { mode: 'Detached' })).status).toBe(200);
    expect((await put(s, SHARD, { mode: 'AttachedMulti', generation: 3 })).status).toBe(400);
    expect(await put(s, OTHER, { mode: 'AttachedSingle' })).toEqual({ status: 400, json: { msg: 'Bad request: AttachedSingle needs a generation' } });
    expect(await put(s, OTHER, { mode: 'AttachedSingle', generation: null })).toMatchObject({ status: 400 });
    expect(s.view()).toEqual({});
  });

  it('AttachedMulti on a node with no location of the shard is accepted (an empty slot, as a real pageserver takes it); AttachedStale for one not attached there is refused', async () => {
    const s = await sim();
    // Neon's live migration sends AttachedMulti to a node that holds nothing: the pageserver makes the slot.
    expect(await put(s, SHARD, { mode: 'AttachedMulti', generation: 1 })).toEqual({
      status: 200,
      json: { shards: [{ shard_id: SHARD, node_id: 1 }], stripe_size: null },
    });
    expect(s.view()).toEqual({ [SHARD]: { mode: 'AttachedMulti', generation: 1 } });
    expect(await put(s, OTHER, { mode: 'AttachedStale', generation: 1 })).toEqual({
      status: 400,
      json: { msg: `Bad request: AttachedStale for tenant shard ${OTHER}, which is not attached here` },
    });
    // A secondary there is held but not attached: AttachedMulti is fine, AttachedStale is not.
    expect((await put(s, OTHER, { mode: 'Secondary', secondary_conf: { warm: true } })).status).toBe(200);
    expect((await put(s, OTHER, { mode: 'AttachedStale', generation: 1 })).status).toBe(400);
    expect((await put(s, OTHER, { mode: 'AttachedMulti', generation: 1 })).status).toBe(200);
    expect((await put(s, OTHER, { mode: 'AttachedStale', generation: 1 })).status).toBe(200);
    expect(s.view()).toEqual({ [SHARD]: { mode: 'AttachedMulti', generation: 1 }, [OTHER]: { mode: 'AttachedStale', generation: 1 } });
  });

  it('wait_lsn for a shard not attached there is 404; attached and caught up is 200', async () => {
    const s = await sim();
    expect(await waitLsn(s, SHARD)).toEqual({ status: 404, json: { msg: `NotFound: Tenant shard ${SHARD} is not attached here` } });
    await put(s, SHARD, { mode: 'Secondary', secondary_conf: { warm: true } });
    expect((await waitLsn(s, SHARD)).status).toBe(404);
    await put(s, SHARD, { mode: 'AttachedSingle', generation: 1 });
    expect((await waitLsn(s, SHARD)).status).toBe(200);
  });
});

describe("the simulator's hold on location_config (a test's pause, ha:scenario-1)", () => {
  const hold = (s: PageserverSim, body: unknown, method = 'PUT') =>
    fetch(new URL(LOCATION_CONFIG_HOLD_PATH, s.url), { method, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: await r.json() }));

  it('held, a location_config waits unlogged and unapplied while reads answer; released, it is applied; a held one whose sender went away never arrives', async () => {
    const s = await sim();
    expect(await hold(s, { held: true })).toEqual({ status: 200, json: { held: true } });
    const pending = put(s, SHARD, { mode: 'AttachedSingle', generation: 1 });
    await until(async () => (s.heldLocationConfigs === 1 ? true : undefined), 'the request held', 10_000, 5);
    expect((await fetch(`${s.url}/v1/location_config`)).status).toBe(200);
    expect(s.view()).toEqual({});
    expect(s.requests.filter((r) => r.startsWith('PUT'))).toEqual([]);
    expect(await hold(s, { held: false })).toEqual({ status: 200, json: { held: false } });
    expect((await pending).status).toBe(200);
    expect(s.view()).toEqual({ [SHARD]: { mode: 'AttachedSingle', generation: 1 } });

    await hold(s, { held: true });
    const gone = new AbortController();
    const abandoned = fetch(`${s.url}/v1/tenant/${OTHER}/location_config`, {
      method: 'PUT',
      body: JSON.stringify({ tenant_conf: {}, mode: 'AttachedSingle', generation: 1 }),
      signal: gone.signal,
    }).catch((e: unknown) => e);
    await until(async () => (s.heldLocationConfigs === 1 ? true : undefined), 'the second request held', 10_000, 5);
    gone.abort();
    await abandoned;
    await until(async () => (s.heldLocationConfigs === 0 ? true : undefined), 'the abandoned request dropped', 10_000, 5);
    await hold(s, { held: false });
    expect(s.view()).toEqual({ [SHARD]: { mode: 'AttachedSingle', generation: 1 } });
  });

  it('the hold route takes PUT {"held": boolean} only', async () => {
    const s = await sim();
    expect(await hold(s, { held: 'yes' })).toMatchObject({ status: 400 });
    expect(await hold(s, {})).toMatchObject({ status: 400 });
    expect((await hold(s, { held: true }, 'POST')).status).toBe(405);
  });
});

async function send(s: PageserverSim, method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as unknown };
}

describe("every request and answer of the simulator is checked against Neon's API (issue 28 point 2)", () => {
  it('a location_config without tenant_conf, with a bad mode or an unknown field is refused by the simulator and reported against the schema', async () => {
    const s = await sim();
    const path = `/v1/tenant/${SHARD}/location_config`;
    expect(await send(s, 'PUT', path, { mode: 'AttachedSingle', generation: 1 })).toEqual({
      status: 400,
      json: { msg: 'Bad request: missing field `tenant_conf`' },
    });
    expect((await send(s, 'PUT', path, { mode: 'Attached', generation: 1, tenant_conf: {} })).status).toBe(400);
    expect((await send(s, 'PUT', path, { mode: 'Secondary', warm: true, tenant_conf: {} })).status).toBe(400);
    expect((await send(s, 'PUT', `${path}?flush_ms=soon`, { mode: 'Detached', tenant_conf: {} })).status).toBe(400);
    expect(takePageserverSchemaViolations()).toEqual([
      `node 1: PUT ${path} request: / must have required property 'tenant_conf'`,
      `node 1: PUT ${path} request: /mode must be equal to one of the allowed values`,
      `node 1: PUT ${path} request: / must NOT have additional properties (warm)`,
      `node 1: PUT ${path}: query flush_ms=soon is not a integer`,
    ]);
    expect(s.view()).toEqual({});
  });

  it('an answer that drifts from Neon’s types is caught: an injected 200 whose body is not PageserverUtilization, and the fields Neon does not send', async () => {
    const s = await sim();
    s.inject({ method: 'GET', path: /^\/v1\/utilization$/, kind: { status: 200 }, times: 1 });
    expect(await send(s, 'GET', '/v1/utilization')).toEqual({ status: 200, json: { msg: 'injected fault 200' } });
    expect(takePageserverSchemaViolations()).toEqual(["node 1: GET /v1/utilization answered 200: / must have required property 'disk_usage_bytes'"]);
    // The simulator's own answer fits.
    expect((await send(s, 'GET', '/v1/utilization')).status).toBe(200);
    expect(takePageserverSchemaViolations()).toEqual([]);
    const schemas = neonSchemas();
    const util = { method: 'GET', path: '/v1/utilization', query: {}, body: null };
    const answer = {
      disk_usage_bytes: 1,
      free_space_bytes: 2,
      disk_wanted_bytes: 1,
      disk_usable_pct: 100,
      shard_count: 0,
      max_shard_count: 20000,
      utilization_score: 0,
      captured_at: '2026-01-01T00:00:00.000Z',
    };
    expect(schemas.checkResponse(util, 200, answer)).toEqual([]);
    // The field the simulator used to send and no pageserver does.
    expect(schemas.checkResponse(util, 200, { ...answer, disk_capacity_bytes: 10 })).toEqual([
      'GET /v1/utilization answered 200: / must NOT have additional properties (disk_capacity_bytes)',
    ]);
    const timelines = { method: 'GET', path: `/v1/tenant/${SHARD}/timeline`, query: {}, body: null };
    expect(
      schemas.checkResponse(timelines, 200, [
        { tenant_id: 'a'.repeat(32), timeline_id: 'b'.repeat(32), last_record_lsn: '0/10', disk_consistent_lsn: '0/10', state: 'Active' },
      ]),
    ).toEqual([`GET /v1/tenant/${SHARD}/timeline answered 200: /0 must have required property 'min_readable_lsn'`]);
    const one = { method: 'GET', path: `/v1/location_config/${SHARD}`, query: {}, body: null };
    expect(
      schemas.checkResponse(one, 200, {
        mode: 'Secondary',
        generation: null,
        secondary_conf: { warm: true },
        shard_number: 0,
        shard_count: 0,
        shard_stripe_size: 0,
      }),
    ).toEqual([`GET /v1/location_config/${SHARD} answered 200: / must have required property 'tenant_conf'`]);
    expect(schemas.checkResponse(one, 404, { message: 'gone' })).toEqual([
      `GET /v1/location_config/${SHARD} answered 404: / must have required property 'msg'`,
    ]);
  });
});
