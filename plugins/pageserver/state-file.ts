import { describeSchemaIssues, readJsonFile } from '../../src/cluster/state-file.ts';
import { z } from 'zod';
import { SHARD_POLICIES } from '../../src/cluster/types.ts';

/**
 * The state file of earlier versions, which kept the controller's intent (placement,
 * generations, cordons) beside the gateway. Only read now: imported once into the
 * gateway's database at start (discovery.ts), never written.
 */
const STATE_FORMAT = 'lockkeeper-pageserver-controller';
const STATE_VERSION = 1;

const shardSchema = z
  .object({
    id: z.string().min(1),
    tenantId: z.string(),
    shardNumber: z.number().int().nonnegative(),
    shardCount: z.number().int().nonnegative(),
    stripeSize: z.number().int().nonnegative(),
    attachedNodeId: z.string(),
    secondaryNodeIds: z.array(z.string()),
    /** The highest generation issued for this shard. */
    generation: z.number().int().nonnegative(),
    preferredZone: z.string().nullable(),
    policy: z.enum(SHARD_POLICIES),
    // Optional, so files of earlier versions still read: a rehearsal's loader (issue 33) writes
    // them to hand the snapshot's whole intent over; absent, discovery and the defaults fill them.
    secondaryCount: z.number().int().nonnegative().optional(),
    pendingComputeNotification: z.boolean().optional(),
    tenantConfig: z.record(z.string(), z.unknown()).nullable().optional(),
  })
  .strict();

const stateSchema = z
  .object({
    format: z.literal(STATE_FORMAT),
    version: z.literal(STATE_VERSION),
    shards: z.array(shardSchema),
    /** Cordoned nodes (Lockkeeper's own flag; pageservers know nothing of it). */
    cordoned: z.array(z.string()),
  })
  .strict();

export type ControllerState = z.output<typeof stateSchema>;
export type ControllerStateInput = z.input<typeof stateSchema>;
export { STATE_FORMAT, STATE_VERSION };

export class PageserverStateFileError extends Error {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`pageserver controller state file ${path}: ${reason}`);
    this.name = 'PageserverStateFileError';
  }
}

export function readControllerState(path: string): ControllerState | null {
  const json = readJsonFile(path, (reason) => new PageserverStateFileError(path, reason));
  if (json === null) return null;
  const parsed = stateSchema.safeParse(json);
  if (!parsed.success) {
    throw new PageserverStateFileError(path, `is not a valid ${STATE_FORMAT} file (${describeSchemaIssues(parsed.error)}); refusing to overwrite it`);
  }
  return parsed.data;
}
