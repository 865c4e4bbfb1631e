import type { FaultSettings, LatencySettings, SimulationControls } from '../../cluster/backend.ts';
import { ConflictError, InvalidInputError, NotFoundError, PreconditionFailedError, UnavailableError } from '../../domain/errors.ts';
import { builder } from '../builder.ts';
import type { GraphQLContext } from '../context.ts';
import { typedBackendCall } from '../map-backend-error.ts';
import { ClusterNodeType } from './cluster-node.ts';
import { ShardType } from './shard.ts';

/**
 * Controls of the simulated cluster. Every type here is named `Simulation…`: the schema
 * drops them all when the backend is not simulated (see schema.ts).
 */
export const SIMULATION_TYPE_PREFIX = 'Simulation';

const ACTION_ERRORS = { types: [NotFoundError, UnavailableError, ConflictError, PreconditionFailedError] };

function controls(ctx: GraphQLContext): SimulationControls {
  const sim = ctx.backend.simulation;
  // Unreachable through the schema (the field is absent without a simulator); kept as a guard.
  if (!sim) throw new PreconditionFailedError('NOT_SIMULATED', 'the backend is not a simulated cluster');
  return sim;
}

async function reloadNode(ctx: GraphQLContext, nodeId: string) {
  ctx.loaders.node.clear(nodeId);
  const node = await ctx.loaders.node.load(nodeId);
  if (!node) throw new NotFoundError('node', nodeId);
  return node;
}

const LatenciesType = builder.objectRef<LatencySettings>('SimulationLatencies').implement({
  description: 'Simulated duration of each action kind, in milliseconds.',
  fields: (t) => ({
    migrate: t.exposeInt('migrate'),
    stop: t.exposeInt('stop'),
    start: t.exposeInt('start'),
    cutOver: t.exposeInt('cutOver'),
    cordon: t.exposeInt('cordon'),
  }),
});

const LatenciesInput = builder.inputType('SimulationLatenciesInput', {
  fields: (t) => ({
    migrate: t.int({ required: false }),
    stop: t.int({ required: false }),
    start: t.int({ required: false }),
    cutOver: t.int({ required: false }),
    cordon: t.int({ required: false }),
  }),
});

const FailureRatesType = builder.objectRef<FaultSettings['failureRate']>('SimulationFailureRates').implement({
  fields: (t) => ({
    migrate: t.float({ resolve: (r) => r.migrate ?? 0 }),
    stop: t.float({ resolve: (r) => r.stop ?? 0 }),
    start: t.float({ resolve: (r) => r.start ?? 0 }),
    cutOver: t.float({ resolve: (r) => r.cutOver ?? 0 }),
    cordon: t.float({ resolve: (r) => r.cordon ?? 0 }),
  }),
});

const FaultsType = builder.objectRef<FaultSettings>('SimulationFaults').implement({
  fields: (t) => ({
    failureRate: t.field({ type: FailureRatesType, resolve: (f) => f.failureRate }),
    stuck: t.exposeStringList('stuck', { description: 'VMs and shards whose moves never finish.' }),
  }),
});

const FailureRatesInput = builder.inputType('SimulationFailureRatesInput', {
  description: 'Probability in [0, 1] that an action of this kind fails with a transient error.',
  fields: (t) => ({
    migrate: t.float({ required: false }),
    stop: t.float({ required: false }),
    start: t.float({ required: false }),
    cutOver: t.float({ required: false }),
    cordon: t.float({ required: false }),
  }),
});

const FaultsInput = builder.inputType('SimulationFaultsInput', {
  fields: (t) => ({
    failureRate: t.field({ type: FailureRatesInput, required: false }),
    stuck: t.stringList({ required: false, description: 'VM or shard ids whose next move never finishes.' }),
  }),
});

/** A day: longer simulated actions are a typo, not a scenario. */
const MAX_LATENCY_MS = 86_400_000;

/** Throws InvalidInputError naming the first field whose value fails `ok`. */
function requireEach(values: Record<string, number | undefined>, prefix: string, ok: (v: number) => boolean, rule: string): void {
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined && !ok(value)) throw new InvalidInputError(`${prefix}.${key}`, String(value), `${prefix}.${key} ${rule}, got ${value}`);
  }
}

const withoutNulls = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v != null)) as { [K in keyof T]?: NonNullable<T[K]> };

const SimulationMutation = builder.objectRef<Record<string, never>>('SimulationMutation').implement({
  description: 'Drive the simulated cluster: restarts, outages, faults, latencies.',
  fields: (t) => ({
    restartNode: t.field({
      type: ClusterNodeType,
      description: 'The node goes offline, comes back, re-attaches (WARMING_UP) and then heartbeats (ACTIVE).',
      args: { nodeId: t.arg.id({ required: true }) },
      errors: ACTION_ERRORS,
      resolve: async (_, { nodeId }, ctx) => {
        await typedBackendCall(() => controls(ctx).restartNode(String(nodeId)));
        return reloadNode(ctx, String(nodeId));
      },
    }),
    setNodeOnline: t.field({
      type: ClusterNodeType,
      description: "Stops (online: false) or resumes the node's heartbeats.",
      args: { nodeId: t.arg.id({ required: true }), online: t.arg.boolean({ required: true }) },
      errors: ACTION_ERRORS,
      resolve: async (_, { nodeId, online }, ctx) => {
        await typedBackendCall(() => controls(ctx).setNodeOnline(String(nodeId), online));
        return reloadNode(ctx, String(nodeId));
      },
    }),
    removeNode: t.field({
      type: 'ID',
      description: 'Removes the node from the cluster; returns its id.',
      args: { nodeId: t.arg.id({ required: true }) },
      errors: { ...ACTION_ERRORS, directResult: false },
      resolve: async (_, { nodeId }, ctx) => {
        await typedBackendCall(() => controls(ctx).removeNode(String(nodeId)));
        return String(nodeId);
      },
    }),
    setLatencies: t.field({
      type: LatenciesType,
      args: { input: t.arg({ type: LatenciesInput, required: true }) },
      errors: { types: [InvalidInputError] },
      resolve: (_, { input }, ctx) => {
        const latencies = withoutNulls(input);
        requireEach(latencies, 'input', (ms) => ms >= 0 && ms <= MAX_LATENCY_MS, `must be between 0 and ${MAX_LATENCY_MS} ms`);
        return controls(ctx).setLatencies(latencies);
      },
    }),
    injectFaults: t.field({
      type: FaultsType,
      args: { input: t.arg({ type: FaultsInput, required: true }) },
      errors: { types: [InvalidInputError] },
      resolve: (_, { input }, ctx) => {
        const failureRate = input.failureRate ? withoutNulls(input.failureRate) : undefined;
        if (failureRate) requireEach(failureRate, 'input.failureRate', (rate) => rate >= 0 && rate <= 1, 'must be a probability in [0, 1]');
        return controls(ctx).injectFaults({ ...(failureRate && { failureRate }), ...(input.stuck && { stuck: input.stuck }) });
      },
    }),
    clearFaults: t.field({ type: FaultsType, resolve: (_, __, ctx) => controls(ctx).clearFaults() }),
    setSecondaryLag: t.field({
      type: ShardType,
      description: 'How many bytes the secondary on nodeId still has to download, and how fast it downloads.',
      args: {
        shardId: t.arg.id({ required: true }),
        nodeId: t.arg.id({ required: true }),
        lagBytes: t.arg.float({ required: true }),
        downloadBytesPerSecond: t.arg.float({ required: false }),
      },
      errors: ACTION_ERRORS,
      resolve: async (_, args, ctx) => {
        const shardId = String(args.shardId);
        await typedBackendCall(() => controls(ctx).setSecondaryLag(shardId, String(args.nodeId), args.lagBytes, args.downloadBytesPerSecond ?? undefined));
        const shard = await ctx.backend.getShard(shardId);
        if (!shard) throw new NotFoundError('shard', shardId);
        return shard;
      },
    }),
    setSecondaryHeatmapKnown: t.field({
      type: ShardType,
      description: 'Whether the secondary on nodeId has a heatmap; without one its lag is unknown (secondary status heatmapMtime null).',
      args: {
        shardId: t.arg.id({ required: true }),
        nodeId: t.arg.id({ required: true }),
        known: t.arg.boolean({ required: true }),
      },
      errors: ACTION_ERRORS,
      resolve: async (_, args, ctx) => {
        const shardId = String(args.shardId);
        await typedBackendCall(() => controls(ctx).setSecondaryHeatmapKnown(shardId, String(args.nodeId), args.known));
        const shard = await ctx.backend.getShard(shardId);
        if (!shard) throw new NotFoundError('shard', shardId);
        return shard;
      },
    }),
  }),
});

const SimulationState = builder.objectRef<SimulationControls>('SimulationState').implement({
  fields: (t) => ({
    latencies: t.field({ type: LatenciesType, resolve: (sim) => sim.getLatencies() }),
    faults: t.field({ type: FaultsType, resolve: (sim) => sim.getFaults() }),
  }),
});

builder.mutationField('simulation', (t) => t.field({ type: SimulationMutation, description: 'Present only with a simulated backend.', resolve: () => ({}) }));

builder.queryField('simulation', (t) =>
  t.field({ type: SimulationState, description: 'Present only with a simulated backend.', resolve: (_, __, ctx) => controls(ctx) }),
);
