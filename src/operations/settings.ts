import { z } from 'zod';
import { DEFAULT_MAX_SECONDARY_LAG_BYTES } from '../domain/storage/drain-plan.ts';

/** Limits of background operations; the `operations` section of the config. */
export const operationSettingsSchema = z
  .object({
    /** Cut-overs in flight per operation (D6; Neon's default). */
    maxConcurrentMoves: z.number().int().min(1).max(10_000).default(64),
    /** Node operations running at once in the cluster (S3; Neon allows exactly one). */
    maxConcurrentOperations: z.number().int().min(1).max(1000).default(1),
    /** D4: a secondary lagging more than this is not cut over to. */
    maxSecondaryLagBytes: z.number().int().min(0).default(DEFAULT_MAX_SECONDARY_LAG_BYTES),
    /** How long an operation waits for an OFFLINE node before it fails (§6). */
    operationDeadlineMs: z.number().int().min(1).default(15 * 60_000),
    /** Live migrations in flight in the whole cluster (KubeVirt's parallelMigrationsPerCluster). */
    maxParallelMigrations: z.number().int().min(1).max(1000).default(5),
    /** Live migrations leaving one node at once (KubeVirt's parallelOutboundMigrationsPerNode). */
    maxOutboundMigrationsPerNode: z.number().int().min(1).max(1000).default(2),
    /** How long a maintenance may take to empty its node before it goes to ERROR (spec M5). */
    maintenanceDeadlineMs: z.number().int().min(1).default(30 * 60_000),
    /** Wait before a migration that failed for a transient reason is tried again. */
    migrationRetryDelayMs: z.number().int().min(0).default(10_000),
  })
  .strict();

export type OperationSettings = z.infer<typeof operationSettingsSchema>;
export const DEFAULT_OPERATION_SETTINGS: OperationSettings = operationSettingsSchema.parse({});
