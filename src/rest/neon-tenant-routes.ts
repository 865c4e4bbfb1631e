/**
 * Neon's per-shard controls (neon:W1–W9, all admin) and the tenant describe that shows
 * what they did (`is_pending_compute_notification` of neon:C14, `preferred_az_id` of neon:W9).
 */
import { z } from 'zod';
import { InvalidInputError, PreconditionFailedError } from '../domain/errors.ts';
import { tenantConfigPatchSchema, tenantConfigSchema } from '../domain/storage/tenant-config.ts';
import { OK, parseJsonBody, type NeonFacadeDeps, type Route } from './neon-route.ts';
import { migrateRequestSchema, NEON_SHARD_POLICY, neonNodeId, nodeIdOfNeon, preferredAzsRequestSchema, tenantPolicyRequestSchema } from './neon-shapes.ts';

const SHARD_POLICY_NAMES: Record<string, string> = Object.fromEntries(Object.entries(NEON_SHARD_POLICY).map(([neon, ours]) => [ours, neon]));
const T = '/control/v1/tenant/:tenant_shard_id';
const tenantIdField = z.string().regex(/^[0-9a-f]{32}$/, 'a tenant id: 32 hex digits');
/** Neon's `TenantConfigRequest` and `TenantConfigPatchRequest`: the tenant id beside the (flattened) fields, unknown ones refused. */
const tenantConfigRequestSchema = tenantConfigSchema.extend({ tenant_id: tenantIdField }).strict();
const tenantConfigPatchRequestSchema = tenantConfigPatchSchema.extend({ tenant_id: tenantIdField }).strict();

export function tenantRoutes(deps: NeonFacadeDeps): Route[] {
  function controls() {
    if (!deps.shardControls) throw new PreconditionFailedError('NOT_SUPPORTED', 'this backend takes no per-shard controls');
    return deps.shardControls;
  }

  return [
    {
      pattern: '/control/v1/tenant/:tenant_id',
      methods: {
        GET: async ({ params }) => {
          const tenant = await controls().describeTenant(params.tenant_id!);
          return {
            status: 200,
            body: {
              tenant_id: tenant.tenantId,
              shards: tenant.shards.map((s) => ({
                tenant_shard_id: s.id,
                node_attached: neonNodeId(s.attachedNodeId, deps.backend.nodeAliases),
                node_secondary: s.secondaryNodeIds.map((id) => neonNodeId(id, deps.backend.nodeAliases)),
                generation: s.details?.generation ?? null,
                is_reconciling: s.details?.reconciling ?? false,
                is_pending_compute_notification: s.pendingComputeNotification ?? false,
                is_splitting: false,
                scheduling_policy: SHARD_POLICY_NAMES[s.policy],
                preferred_az_id: s.preferredZone,
              })),
              policy: { Attached: tenant.shards[0]?.details?.secondaryCount ?? tenant.shards[0]?.secondaryNodeIds.length ?? 0 },
            },
          };
        },
      },
    },
    {
      pattern: `${T}/migrate`,
      methods: {
        /** neon:W1–W4: 200 `{}`. */
        PUT: async ({ params, body, meta }) => {
          const r = parseJsonBody(body, migrateRequestSchema);
          const c = r.migration_config;
          const warmupTimeout = c?.secondary_warmup_timeout;
          const requestTimeout = c?.secondary_download_request_timeout;
          await controls().migrate(
            {
              shardId: params.tenant_shard_id!,
              nodeId: nodeIdOfNeon(String(r.node_id), deps.backend.nodeAliases),
              originNodeId: r.origin_node_id == null ? null : nodeIdOfNeon(String(r.origin_node_id), deps.backend.nodeAliases),
              overrideScheduler: c?.override_scheduler ?? false,
              prewarm: c?.prewarm ?? true,
              warmup:
                warmupTimeout != null || requestTimeout != null ? { timeoutMs: warmupTimeout ?? 300_000, requestTimeoutMs: requestTimeout ?? 20_000 } : null,
            },
            meta,
          );
          return { status: 200, body: {} };
        },
      },
    },
    {
      pattern: `${T}/migrate_secondary`,
      methods: {
        /** neon:W5: only `node_id` is used. */
        PUT: async ({ params, body }) => {
          const r = parseJsonBody(body, migrateRequestSchema);
          await controls().migrateSecondary(params.tenant_shard_id!, String(r.node_id));
          return { status: 200, body: {} };
        },
      },
    },
    {
      pattern: `${T}/cancel_reconcile`,
      methods: {
        PUT: async ({ params }) => {
          await controls().cancelReconcile(params.tenant_shard_id!);
          return OK;
        },
      },
    },
    {
      pattern: `${T}/policy`,
      methods: {
        /** neon:W7, on `/tenant/:tenant_id/policy`. */
        PUT: async ({ params, body }) => {
          const r = parseJsonBody(body, tenantPolicyRequestSchema);
          if (r.placement === 'Detached' || r.placement === 'Secondary') {
            throw new InvalidInputError(
              'placement',
              r.placement,
              `placement ${r.placement} is refused: Lockkeeper keeps every shard attached (use {"Attached": n})`,
            );
          }
          await controls().setTenantPolicy(params.tenant_shard_id!, {
            ...(r.scheduling != null && { policy: NEON_SHARD_POLICY[r.scheduling] }),
            ...(r.placement != null && { secondaryCount: r.placement.Attached }),
          });
          return OK;
        },
      },
    },
    // neon:W10: Neon's tenant config routes, at Neon's paths beside /control/v1.
    {
      pattern: '/v1/tenant/config',
      methods: {
        /** The whole config; 200 `null` once stored (reconciles follow). */
        PUT: async ({ body }) => {
          const { tenant_id, ...config } = parseJsonBody(body, tenantConfigRequestSchema);
          await controls().setTenantConfig(tenant_id, config);
          return OK;
        },
        /** Neon's `FieldPatch`: a value sets, `null` removes, a field left out is kept. */
        PATCH: async ({ body }) => {
          const { tenant_id, ...patch } = parseJsonBody(body, tenantConfigPatchRequestSchema);
          await controls().patchTenantConfig(tenant_id, patch);
          return OK;
        },
      },
    },
    {
      pattern: '/v1/tenant/:tenant_id/config',
      scopes: { GET: 'admin' },
      methods: {
        GET: async ({ params }) => {
          const config = await controls().getTenantConfig(params.tenant_id!);
          // As Neon's controller: no global defaults, so both are the tenant's own config.
          return { status: 200, body: { tenant_specific_overrides: config, effective_config: config } };
        },
      },
    },
    {
      pattern: '/control/v1/preferred_azs',
      methods: {
        PUT: async ({ body }) => ({ status: 200, body: { updated: await controls().setPreferredZones(parseJsonBody(body, preferredAzsRequestSchema)) } }),
      },
    },
  ];
}
