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
  })
  .strict();

export type OperationSettings = z.infer<typeof operationSettingsSchema>;
export const DEFAULT_OPERATION_SETTINGS: OperationSettings = operationSettingsSchema.parse({});
