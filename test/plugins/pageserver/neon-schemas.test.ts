import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatShardId } from '../../../simulators/pageserver/index.ts';
import { neonSchemas, readOverlay } from '../../support/neon-schemas.ts';

/**
 * Issue 28 point 2: the pageserver simulator is checked, in every test, against Neon's own
 * API: openapi_spec.yml kept unchanged plus an overlay of corrections from the Rust types
 * (the simulator's own requests and answers: simulator-strictness.test.ts).
 */

const SHARD = formatShardId('a'.repeat(32), 0, 0);
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
