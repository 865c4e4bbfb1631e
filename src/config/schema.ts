/**
 * The config file's shape and every default of it: code that needs a setting takes it
 * from the config parsed at start (or from DEFAULT_CONFIG), never states a default again.
 */
import { DEFAULT_POD_DRAIN_OPTIONS } from '../domain/pods/drain.ts';
import { z } from 'zod';
import { DEFAULT_HOST, DEFAULT_PORT } from './server-defaults.ts';

const pluginEntrySchema = z
  .object({
    name: z
      .string()
      .regex(/^[a-z][a-z0-9-]*$/, 'must be a plugin folder name such as "fake"')
      .describe('A built-in plugin: a folder under `plugins/`.'),
    options: z.record(z.string(), z.unknown()).default({}).describe("The plugin's own options, checked by the plugin's schema (see each backend's page)."),
  })
  .strict();

const serverSettingsSchema = z
  .object({
    port: z.number().int().min(0).max(65535).default(DEFAULT_PORT).describe('Also LOCKKEEPER_PORT.'),
    host: z.string().min(1).default(DEFAULT_HOST).describe('Also LOCKKEEPER_HOST.'),
    insecure: z.boolean().default(false).describe('Listen on a non-loopback address without authentication (no token). Also LOCKKEEPER_INSECURE=1.'),
    allowedOrigins: z
      .array(z.string().min(1))
      .default([])
      .describe('Browser origins (e.g. "https://ops.example.com") allowed to call the API: CORS and CSRF checks.'),
  })
  .strict();

/** k8s:K4, Lockkeeper's column (Harvester's values); `disableEviction` is not offered. */
const podDrainSettingsSchema = z
  .object({
    ignoreDaemonSets: z
      .boolean()
      .default(DEFAULT_POD_DRAIN_OPTIONS.ignoreDaemonSets)
      .describe('DaemonSet-managed pods stay on the node (else they refuse the drain).'),
    deleteEmptyDirData: z
      .boolean()
      .default(DEFAULT_POD_DRAIN_OPTIONS.deleteEmptyDirData)
      .describe('Pods with emptyDir volumes are evicted (else they refuse the drain).'),
    force: z.boolean().default(DEFAULT_POD_DRAIN_OPTIONS.force).describe('Evict pods that no controller manages.'),
    gracePeriodSeconds: z
      .number()
      .int()
      .min(-1)
      .default(DEFAULT_POD_DRAIN_OPTIONS.gracePeriodSeconds)
      .describe("−1: each pod's own terminationGracePeriodSeconds; 0: at once."),
    skipWaitForDeleteTimeoutSeconds: z
      .number()
      .int()
      .min(0)
      .default(DEFAULT_POD_DRAIN_OPTIONS.skipWaitForDeleteTimeoutSeconds)
      .describe('> 0: pods deleting longer than this are skipped.'),
    podSelector: z
      .string()
      .default(DEFAULT_POD_DRAIN_OPTIONS.podSelector)
      .describe('Label selector of the pods to drain (virt-launcher pods are always left out: k8s:K1).'),
  })
  .strict();

/** Limits of background operations. */
const operationSettingsSchema = z
  .object({
    maxConcurrentMoves: z.number().int().min(1).max(10_000).default(64).describe("Cut-overs in flight per operation (storage:D6; Neon's default)."),
    maxConcurrentFailovers: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(128)
      .describe(
        "Shards a FAILOVER attaches elsewhere at once (neon:H5): Neon's reconcile limit (`RECONCILER_CONCURRENCY_DEFAULT`). A lost node's failover takes ⌈shards / this⌉ attach latencies.",
      ),
    maxConcurrentOperations: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(1)
      .describe('Node operations running at once in the cluster (storage:S3; Neon allows exactly one).'),
    maxSecondaryLagBytes: z
      .number()
      .int()
      .min(0)
      .default(256 * 1024 * 1024)
      .describe('storage:D4: a secondary lagging more than this is not cut over to.'),
    operationDeadlineMs: z
      .number()
      .int()
      .min(1)
      .default(15 * 60_000)
      .describe('How long an operation waits for an OFFLINE node before it fails (storage:X4).'),
    maxParallelMigrations: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(5)
      .describe("Live migrations in flight in the whole cluster (KubeVirt's parallelMigrationsPerCluster)."),
    maxOutboundMigrationsPerNode: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(2)
      .describe("Live migrations leaving one node at once (KubeVirt's parallelOutboundMigrationsPerNode)."),
    maintenanceDeadlineMs: z
      .number()
      .int()
      .min(1)
      .default(30 * 60_000)
      .describe('How long a maintenance may take to empty its node before it goes to ERROR (vm:M5).'),
    expectedStepMs: z
      .number()
      .int()
      .min(1)
      .default(5 * 60_000)
      .describe(
        'What a step (a cut-over, a migration, a stop) is expected to take before any step of its operation finished and when the backend declares no latency; twice that is a stall (issue 17).',
      ),
    gatewayNodeName: z
      .string()
      .min(1)
      .optional()
      .describe(
        "The node Lockkeeper itself runs on (also LOCKKEEPER_NODE_NAME, from the pod's spec.nodeName): its maintenance is refused while the gateway's volume cannot move.",
      ),
    gatewayVolumeMovable: z
      .boolean()
      .default(false)
      .describe(
        "The gateway's database volume re-attaches on other nodes (network block storage), or the database is PostgreSQL: its own node may go into maintenance.",
      ),
    migrationRetryDelayMs: z.number().int().min(0).default(10_000).describe('Wait before a migration that failed for a transient reason is tried again.'),
    podDrain: podDrainSettingsSchema
      .prefault({})
      .describe('k8s:K4: the pod drain of maintenance on backends that run pods (Kubernetes); a request may override each.'),
  })
  .strict();

/** Access control (src/auth); tokens themselves live in the database. */
const authSettingsSchema = z
  .object({
    metrics: z
      .enum(['public', 'viewer', 'operator', 'admin'])
      .default('viewer')
      .describe('Scope /metrics needs when authentication is on; "public" serves it to anyone.'),
    recheckIntervalMs: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(5000)
      .describe('How often open WebSockets and event streams re-check their token (revoked by the CLI, expired).'),
    outageGraceMs: z
      .number()
      .int()
      .min(0)
      .max(3_600_000)
      .default(300_000)
      .describe(
        'While the database is unavailable, a token verified against it at most this long ago is still accepted (issue 27): no revocation can be written meanwhile. 0: none is.',
      ),
  })
  .strict();

/** Abuse limits (issue 7). */
const limitSettingsSchema = z
  .object({
    maxDepth: z.number().int().min(1).max(100).default(15).describe('Deepest nesting of a GraphQL operation (fragments flattened, introspection exempt).'),
    maxCost: z
      .number()
      .int()
      .min(1)
      .default(50_000)
      .describe(
        "graphql-armor's static cost of a GraphQL operation, about the number of values its answer can hold: objects 2, scalars 1, a list field's children multiplied by its literal `first`/`last` (introspection exempt). `vms(first: 1000) { … 20 fields … }` costs about 20 000.",
      ),
    maxAliases: z
      .number()
      .int()
      .min(0)
      .default(15)
      .describe(
        'Aliased fields in one operation (fragments counted where spread, `__typename` exempt): aliases let one request run a field thousands of times under cost and depth limits that each count it once per alias.',
      ),
    maxBodyBytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024)
      .describe('Largest request body (GraphQL over HTTP, REST) and WebSocket message, in bytes.'),
    mutationsPerMinute: z.number().int().min(0).default(120).describe('Mutations (GraphQL root fields, REST PUT/DELETE) per token per minute; 0 = unlimited.'),
  })
  .strict();

/** k8s:A3: the HTTPS listener of the maintenance-strategy admission webhook; absent: no webhook. */
const admissionWebhookSchema = z
  .object({
    host: z.string().min(1).default('127.0.0.1').describe('In a cluster: 0.0.0.0, behind the Service of deploy/admission-webhook.yaml.'),
    port: z.number().int().min(0).max(65535).default(8443).describe('HTTPS port of the webhook listener.'),
    certFile: z.string().min(1).describe("PEM certificate (chain) and key; relative paths are resolved against the config file's directory."),
    keyFile: z.string().min(1).describe('PEM private key of certFile; relative paths as certFile.'),
  })
  .strict();

/** Several replicas on PostgreSQL (ha:L1); unused on SQLite. */
const haSettingsSchema = z
  .object({
    leaseTtlMs: z
      .number()
      .int()
      .min(200)
      .max(600_000)
      .default(10_000)
      .describe("How long the leader's lease lasts without a renewal, by the database's clock."),
    leaseRenewMs: z.number().int().min(50).max(300_000).default(2000).describe('How often the leader renews it and stand-bys try to take it.'),
    advertiseUrl: z
      .string()
      .url()
      .optional()
      .describe('The URL other replicas and clients reach this one at (GET /control/v1/leader); default the address it listens on.'),
  })
  .strict()
  .refine((ha) => ha.leaseRenewMs * 2 <= ha.leaseTtlMs, { message: 'leaseRenewMs must be at most half of leaseTtlMs', path: ['leaseRenewMs'] });

// `prefault({})`: an absent section is parsed as an empty one, so its defaults are the ones above.
export const configSchema = z
  .object({
    server: serverSettingsSchema.prefault({}).describe('The HTTP listener.'),
    database: z
      .object({ url: z.string().min(1).optional().describe('`file:<path>` (SQLite) or `postgresql://…` (PostgreSQL). Also LOCKKEEPER_DATABASE_URL.') })
      .strict()
      .prefault({})
      .describe("Also LOCKKEEPER_DATABASE_URL; absent: the store's default file."),
    plugins: z
      .array(pluginEntrySchema)
      .min(1)
      .default([{ name: 'fake', options: {} }])
      .describe('The backends: at most one serving VMs and one serving shards; default the simulated demo cluster.'),
    operations: operationSettingsSchema.prefault({}).describe('Limits of background operations.'),
    auth: authSettingsSchema.prefault({}).describe('Access control; tokens themselves live in the database.'),
    limits: limitSettingsSchema.prefault({}).describe('Abuse limits of the API.'),
    ha: haSettingsSchema.prefault({}).describe('Several replicas on PostgreSQL (ha:L1); unused on SQLite.'),
    admissionWebhook: admissionWebhookSchema
      .optional()
      .describe('k8s:A3: the HTTPS listener of the maintenance-strategy admission webhook; absent: no webhook.'),
  })
  .strict();

export type LockkeeperConfig = z.infer<typeof configSchema>;
export type PluginEntry = z.infer<typeof pluginEntrySchema>;
export type OperationSettings = z.infer<typeof operationSettingsSchema>;
export type AuthSettings = z.infer<typeof authSettingsSchema>;
export type LimitSettings = z.infer<typeof limitSettingsSchema>;
