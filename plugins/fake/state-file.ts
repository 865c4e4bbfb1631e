import { describeSchemaIssues, readJsonFile, writeFileAtomic } from '../../src/cluster/state-file.ts';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { ACTION_KINDS } from '../../src/cluster/backend.ts';
import { NODE_SELECTOR_OPERATORS, RUN_STRATEGIES, SHARD_POLICIES, VM_STATUSES } from '../../src/cluster/types.ts';

/**
 * The durable form of a simulated cluster (`statePath`): everything a real cluster keeps
 * when the gateway managing it dies, moves in flight included (each with how long it had
 * run); the fault PRNG's position is not part of it (see README). Times are stored relative
 * to `savedAt` (the cluster clock).
 */

export const STATE_FILE_FORMAT = 'lockkeeper-fake-cluster';
export const STATE_FILE_VERSION = 1;

const labels = z.record(z.string(), z.string());
const ms = z.number().int().nonnegative();
const bytes = z.number().nonnegative();

const nodeSchema = z
  .object({
    id: z.string().min(1),
    name: z.string(),
    zone: z.string().nullable(),
    roles: z.array(z.string()),
    availability: z.enum(['ACTIVE', 'WARMING_UP', 'OFFLINE']),
    cordoned: z.boolean(),
    labels,
    bootId: z.string().nullable().optional(),
  })
  .strict();

const vmSchema = z
  .object({
    id: z.string().min(1),
    namespace: z.string(),
    name: z.string(),
    nodeId: z.string().nullable(),
    runStrategy: z.enum(RUN_STRATEGIES),
    status: z.enum(VM_STATUSES),
    maintenanceStrategyLabel: z.string().nullable(),
    labels,
    volumes: z.array(z.object({ name: z.string(), replicas: z.array(z.object({ nodeId: z.string(), healthy: z.boolean() }).strict()) }).strict()),
    liveMigratable: z.boolean(),
    liveMigratableReason: z.string().nullable(),
    nodeSelector: labels,
    requiredNodeAffinity: z.array(
      z
        .object({
          matchExpressions: z.array(z.object({ key: z.string(), operator: z.enum(NODE_SELECTOR_OPERATORS), values: z.array(z.string()) }).strict()),
        })
        .strict(),
    ),
    tracking: z
      .object({ nodeName: z.string(), strategy: z.string(), savedRunStrategy: z.enum(RUN_STRATEGIES).nullable() })
      .strict()
      .nullable(),
  })
  .strict();

const shardSchema = z
  .object({
    id: z.string().min(1),
    tenantId: z.string(),
    shardNumber: z.number().int().nonnegative(),
    shardCount: z.number().int().nonnegative(),
    attachedNodeId: z.string(),
    secondaryNodeIds: z.array(z.string()),
    preferredZone: z.string().nullable(),
    policy: z.enum(SHARD_POLICIES),
    /** What a fully warm secondary holds. */
    sizeBytes: bytes,
  })
  .strict();

const secondarySchema = z
  .object({
    shardId: z.string(),
    nodeId: z.string(),
    bytesTotal: bytes,
    /** Downloaded at `savedAt`; progress after that continues from here at `bytesPerSecond`. */
    bytesDownloaded: bytes,
    bytesPerSecond: bytes,
    /** Age of the heatmap at `savedAt`; null = no heatmap (unknown lag). */
    heatmapAgeMs: z.number().nonnegative().nullable(),
  })
  .strict();

const rate = z.number().min(0).max(1);

/** What a move in flight will have done once its latency has run: enough to finish it after a reload. */
const moveResultSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('migrate'), vmId: z.string(), targetNodeId: z.string() }).strict(),
  z.object({ kind: z.literal('stop'), vmId: z.string() }).strict(),
  z.object({ kind: z.literal('start'), vmId: z.string(), targetNodeId: z.string(), runStrategy: z.enum(RUN_STRATEGIES) }).strict(),
  z.object({ kind: z.literal('cordon'), nodeId: z.string(), cordoned: z.boolean() }).strict(),
  z.object({ kind: z.literal('cutOver'), shardId: z.string(), fromNodeId: z.string(), toNodeId: z.string() }).strict(),
]);

const savedMoveSchema = z
  .object({
    result: moveResultSchema,
    latencyMs: ms,
    /** How long the move had run at `savedAt`. */
    elapsedMs: z.number().nonnegative(),
  })
  .strict();

const stateFileSchema = z
  .object({
    format: z.literal(STATE_FILE_FORMAT),
    version: z.literal(STATE_FILE_VERSION),
    /** The cluster clock when the file was written. */
    savedAt: z.number(),
    nodes: z.array(nodeSchema),
    vms: z.array(vmSchema),
    shards: z.array(shardSchema),
    secondaries: z.array(secondarySchema),
    latencies: z.object({ migrate: ms, stop: ms, start: ms, cutOver: ms, cordon: ms }).strict(),
    faults: z.object({ failureRate: z.partialRecord(z.enum(ACTION_KINDS), rate), stuck: z.array(z.string()) }).strict(),
    /** Nodes between going down for a restart and re-attaching; `heldDown` = kept OFFLINE by setNodeOnline(false). */
    restarts: z.array(z.object({ nodeId: z.string(), vmIds: z.array(z.string()), heldDown: z.boolean() }).strict()),
    /** Nodes re-attached (WARMING_UP) whose first heartbeat was still pending. */
    warmingUp: z.array(z.string()),
    /** Moves in flight; absent in files written before moves were saved. */
    moves: z.array(savedMoveSchema).default([]),
  })
  .strict();

export type StateFile = z.output<typeof stateFileSchema>;
export type SavedSecondary = StateFile['secondaries'][number];
export type MoveResult = z.output<typeof moveResultSchema>;
export type SavedMove = StateFile['moves'][number];

export class StateFileError extends Error {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`simulated cluster state file ${path}: ${reason}`);
    this.name = 'StateFileError';
  }
}

/** The saved state, or null when there is no file yet. Anything else unreadable throws, naming the file. */
export function readStateFile(path: string): StateFile | null {
  const json = readJsonFile(path, (reason) => new StateFileError(path, reason));
  if (json === null) return null;
  const format = (json as { format?: unknown } | null)?.format;
  if (format !== STATE_FILE_FORMAT) {
    throw new StateFileError(path, `is not a ${STATE_FILE_FORMAT} state file (format ${JSON.stringify(format)}); refusing to overwrite it`);
  }
  const parsed = stateFileSchema.safeParse(json);
  if (!parsed.success) {
    throw new StateFileError(path, `is invalid (${describeSchemaIssues(parsed.error)}); fix or delete it`);
  }
  return parsed.data;
}

/** Replaces the file atomically (see writeFileAtomic). */
export function writeStateFile(path: string, state: StateFile): void {
  writeFileAtomic(path, JSON.stringify(state));
}

export function ensureDirectoryOf(path: string): void {
  mkdirSync(dirname(path), { recursive: true });
}
