import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { formatShardId, PageserverSim, SafetyChecker } from '../../../simulators/pageserver/index.ts';
import { neonSchemas, readOverlay } from '../../support/neon-schemas.ts';
import { takePageserverSchemaViolations } from '../../support/pageserver-schema-violations.ts';

/**
 * Issue 28 point 2: the pageserver simulator is checked, in every test, against Neon's own
 * API: openapi_spec.yml kept unchanged plus an overlay of corrections from the Rust types.
 */

const SHARD = formatShardId('a'.repeat(32), 0, 0);
const sims: PageserverSim[] = [];
afterEach(async () => {
  for (const s of sims.splice(0)) await s.close();
});

async function sim(): Promise<PageserverSim> {
  const s = await new PageserverSim({ nodeId: 1, safety: new SafetyChecker() }).start();
  sims.push(s);
  return s;
}

async function send(s: PageserverSim, method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as unknown };
}

describe("Neon's pageserver API as data", () => {
  it('the spec is the file of neondatabase/neon 6a35a3e9 byte for byte, and every overlay entry cites a Rust source line', () => {
    const overlay = readOverlay();
    expect(overlay.spec).toEqual({
      repository: 'github.com/neondatabase/neon',
      path: 'pageserver/src/http/openapi_spec.yml',
      commit: '6a35a3e9f149798df1b1761ee64099d8d75fbe90',
      sha256: '8e96cdab4570470270f87bfc7909a89ac9429419239059fba708c06a5d05a3a4',
    });
    const raw = readFileSync(new URL('../../support/schemas/neon/openapi_spec.yml', import.meta.url));
    expect(createHash('sha256').update(raw).digest('hex')).toBe('8e96cdab4570470270f87bfc7909a89ac9429419239059fba708c06a5d05a3a4');
    for (const c of overlay.corrections) {
      expect(c.cite, c.pointer).toMatch(/^(libs\/pageserver_api|pageserver)\/src\/[\w/]+\.rs:\d+$/);
      expect(c.why.length, c.pointer).toBeGreaterThan(10);
    }
    expect(overlay.corrections.map((c) => c.pointer)).toEqual(
      expect.arrayContaining([
        '/components/schemas/TenantLocationConfigRequest/properties/shard_number',
        '/components/schemas/TenantLocationConfigRequest/properties/shard_count',
        '/components/schemas/TenantLocationConfigRequest/properties/shard_stripe_size',
        '/components/schemas/TenantLocationConfigRequest/required',
        '/paths/~1v1~1tenant~1{tenant_shard_id}~1wait_lsn',
        '/paths/~1v1~1location_config',
      ]),
    );
  });

  it('the overlay is what makes the spec fit Neon: without its corrections a body the Rust types take is refused, and one they refuse is taken', () => {
    const schemas = neonSchemas();
    const put = { method: 'PUT', path: `/v1/tenant/${SHARD}/location_config`, query: {} };
    // Rust: shard fields exist, tenant_conf is required, compaction_threshold is an integer.
    expect(
      schemas.checkRequest({
        ...put,
        body: { mode: 'AttachedSingle', generation: 1, shard_number: 0, shard_count: 0, shard_stripe_size: 0, tenant_conf: { compaction_threshold: 10 } },
      }),
    ).toEqual([]);
    expect(schemas.checkRequest({ ...put, body: { mode: 'Secondary', secondary_conf: { warm: true } } })).toEqual([
      `PUT /v1/tenant/${SHARD}/location_config request: / must have required property 'tenant_conf'`,
    ]);
    expect(schemas.checkRequest({ ...put, body: { mode: 'Secondary', tenant_conf: { compaction_threshold: '10' } } })).toEqual([
      `PUT /v1/tenant/${SHARD}/location_config request: /tenant_conf/compaction_threshold must be integer`,
    ]);
    expect(
      schemas.checkRequest({
        method: 'POST',
        path: `/v1/tenant/${SHARD}/wait_lsn`,
        query: {},
        body: { timeout: { secs: 1, nanos: 0 }, ['b'.repeat(32)]: '0/16B3748' },
      }),
    ).toEqual([]);
    expect(schemas.checkRequest({ method: 'GET', path: '/v1/location_config', query: {}, body: null })).toEqual([]);
    expect(schemas.checkRequest({ method: 'GET', path: '/v1/tenant/x/nonsense', query: {}, body: null })).toEqual([
      "GET /v1/tenant/x/nonsense: no such route in Neon's pageserver API",
    ]);
  });
});

describe('every request and answer of the simulator is checked', () => {
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
