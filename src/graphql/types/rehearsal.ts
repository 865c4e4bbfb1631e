/**
 * Rehearsals of rollouts (issue 33): `rehearseRollout` runs a rollout on a copy of the live
 * cluster in virtual time, in a worker thread; `rehearsal(id)` / `rehearsals` read what it
 * predicted. Durations are in seconds (Float), like the rest of the API's `…Seconds` fields.
 */
import { GraphQLError } from 'graphql';
import { ConflictError, InvalidInputError, NotFoundError } from '../../domain/errors.ts';
import type { Quantiles, RehearsalReport, ReportPause } from '../../domain/rehearsal/types.ts';
import { PLAN_CHANGE_CODES, type PlanChange } from '../../domain/rehearsal/plan-changes.ts';
import { REHEARSAL_STATES, RehearsalStaleError, type RehearsalRecord } from '../../rehearsal/service.ts';
import { builder, PAGE } from '../builder.ts';
import { typedBackendCall } from '../map-backend-error.ts';
import { ErrorInterface } from './errors.ts';
import { OperationType } from './operation.ts';
import { audit, StartInput, toInput } from './rollout.ts';

const seconds = (ms: number) => ms / 1000;

const QuantilesType = builder.objectRef<Quantiles>('DurationQuantiles').implement({
  description: 'A duration over the samples, in seconds: 10th, 50th (median) and 90th percentile; p10–p90 is the 80 % interval.',
  fields: (t) => ({
    p10: t.float({ resolve: (q) => seconds(q.p10) }),
    p50: t.float({ resolve: (q) => seconds(q.p50) }),
    p90: t.float({ resolve: (q) => seconds(q.p90) }),
  }),
});

type ReportWave = RehearsalReport['waves'][number];
const WaveType = builder.objectRef<ReportWave>('RehearsalWave').implement({
  fields: (t) => ({
    wave: t.exposeInt('wave', { description: '1-based.' }),
    nodeIds: t.exposeIDList('nodeIds'),
    start: t.field({ type: QuantilesType, description: 'Seconds from the rollout’s start to the wave’s.', resolve: (w) => w.startMs }),
    duration: t.field({ type: QuantilesType, resolve: (w) => w.durationMs }),
  }),
});

type ReportNode = RehearsalReport['nodes'][number];
const NodeType = builder.objectRef<ReportNode>('RehearsalNode').implement({
  fields: (t) => ({
    nodeId: t.exposeID('nodeId'),
    wave: t.exposeInt('wave', { description: '1-based.' }),
    start: t.field({ type: QuantilesType, nullable: true, description: 'Null: it never started in any sample.', resolve: (n) => n.startMs }),
    duration: t.field({ type: QuantilesType, nullable: true, description: 'Null: it never finished in any sample.', resolve: (n) => n.durationMs }),
    leftOnNode: t.exposeStringList('leftOnNode', { description: 'Workloads that would still be on the node when it restarts.' }),
    safeToRestart: t.exposeBoolean('safeToRestart', {
      nullable: true,
      description: 'safeToRestart as it would read when the node restarts; null when it never got there.',
    }),
  }),
});

const PauseType = builder.objectRef<ReportPause>('RehearsalPause').implement({
  description: 'A pause the rollout would hit: what held it, and in what fraction of the samples (timing-dependent pauses are probabilities).',
  fields: (t) => ({
    key: t.exposeString('key', { description: '`reason:node:workload`, the same in every sample.' }),
    reason: t.exposeString('reason', { description: 'e.g. UNSAFE_TO_RESTART, VM_NOT_MIGRATABLE, PDB, BUDGET, NODE_NOT_BACK.' }),
    nodeId: t.exposeID('nodeId', { nullable: true }),
    workload: t.exposeString('workload', { nullable: true, description: 'The VM, pod, PDB or shard that held it.' }),
    message: t.exposeString('message'),
    probability: t.exposeFloat('probability', { description: 'Fraction of the samples in which it happened (0–1).' }),
    typicalAtSeconds: t.float({ description: 'Median seconds from the start at which it happened.', resolve: (p) => seconds(p.typicalAtMs) }),
  }),
});

const LeftStoppedType = builder.objectRef<RehearsalReport['vmsLeftStopped'][number]>('RehearsalVmLeftStopped').implement({
  fields: (t) => ({ vmId: t.exposeID('vmId'), probability: t.exposeFloat('probability') }),
});

const OutcomesType = builder.objectRef<RehearsalReport['outcomes']>('RehearsalOutcomes').implement({
  description: 'How many samples ended how; GAVE_UP: the same node paused again after one scoped override (docs/rehearsal.md).',
  fields: (t) => ({
    succeeded: t.int({ resolve: (o) => o.SUCCEEDED }),
    failed: t.int({ resolve: (o) => o.FAILED }),
    cancelled: t.int({ resolve: (o) => o.CANCELLED }),
    gaveUp: t.int({ resolve: (o) => o.GAVE_UP }),
  }),
});

const SourcesType = builder.objectRef<RehearsalReport['durationSources']>('RehearsalDurationSources').implement({
  description: 'How many drawn durations came from the history of the same workload, of its node, of the cluster, or from the backend’s defaults.',
  fields: (t) => ({
    workload: t.int({ resolve: (s) => s.WORKLOAD }),
    node: t.int({ resolve: (s) => s.NODE }),
    cluster: t.int({ resolve: (s) => s.CLUSTER }),
    default: t.int({ resolve: (s) => s.DEFAULT }),
  }),
});

const ReportType = builder.objectRef<RehearsalReport>('RehearsalReport').implement({
  description: 'How the rollout would go, over the samples (issue 33).',
  fields: (t) => ({
    samples: t.exposeInt('samples'),
    duration: t.field({ type: QuantilesType, description: 'The whole rollout, in seconds.', resolve: (r) => r.durationMs }),
    waves: t.field({ type: [WaveType], resolve: (r) => r.waves }),
    nodes: t.field({ type: [NodeType], resolve: (r) => r.nodes }),
    pauses: t.field({ type: [PauseType], description: 'First one first.', resolve: (r) => r.pauses }),
    vmsLeftStopped: t.field({ type: [LeftStoppedType], description: 'VMs the rollout would stop and not start again.', resolve: (r) => r.vmsLeftStopped }),
    peakNodesOut: t.exposeInt('peakNodesOut', { description: 'The most nodes out of service at once.' }),
    outcomes: t.field({ type: OutcomesType, resolve: (r) => r.outcomes }),
    durationSources: t.field({ type: SourcesType, resolve: (r) => r.durationSources }),
  }),
});

const StateEnum = builder.enumType('RehearsalState', { values: REHEARSAL_STATES });

const ProgressType = builder.objectRef<{ done: number; total: number }>('RehearsalProgress').implement({
  fields: (t) => ({ done: t.exposeInt('done', { description: 'Samples finished.' }), total: t.exposeInt('total') }),
});

const summaryOf = (r: RehearsalRecord) => {
  const i = r.input;
  const what = i.nodes?.length ? `node(s) ${i.nodes.join(', ')}` : `nodes selected by ${JSON.stringify(i.selector ?? {})}`;
  return `${i.action} of ${what}, maxUnavailable ${i.maxUnavailable ?? 1}, restart ${i.restart ?? 'WAIT_FOR_REATTACH'}`;
};

const RehearsalType = builder.objectRef<RehearsalRecord>('Rehearsal').implement({
  description: 'A rollout rehearsed on a copy of the cluster in virtual time (issue 33, docs/rehearsal.md).',
  fields: (t) => ({
    id: t.exposeID('id'),
    state: t.field({ type: StateEnum, resolve: (r) => r.state }),
    createdAt: t.field({ type: 'DateTime', resolve: (r) => r.createdAt }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.finishedAt }),
    snapshotTakenAt: t.field({ type: 'DateTime', nullable: true, description: 'When the cluster was read.', resolve: (r) => r.snapshotTakenAt }),
    actor: t.exposeString('actor'),
    reason: t.exposeString('reason', { nullable: true }),
    samples: t.exposeInt('samples'),
    seed: t.exposeInt('seed', { description: 'Sample i ran with seed + i; the same seed on the same snapshot and history replays it.' }),
    error: t.exposeString('error', { nullable: true }),
    input: t.field({ type: 'JSON', description: 'The StartRolloutInput rehearsed.', resolve: (r) => r.input }),
    summary: t.string({ description: 'The input in words.', resolve: summaryOf }),
    progress: t.field({
      type: ProgressType,
      nullable: true,
      description: 'While RUNNING, on the gateway that runs it: samples done.',
      resolve: (r, _, ctx) => ctx.rehearsals.progressOf(r.id),
    }),
    report: t.field({ type: ReportType, nullable: true, description: 'Once SUCCEEDED.', resolve: (r) => r.report }),
    rollout: t.field({
      type: OperationType,
      nullable: true,
      description: 'The rollout started with this rehearsal (startRollout(rehearsal:)).',
      resolve: (r, _, ctx) => (r.rolloutId ? ctx.operations.getOperation(r.rolloutId) : null),
    }),
  }),
});

builder.objectField(OperationType, 'rehearsal', (t) =>
  t.field({
    type: RehearsalType,
    nullable: true,
    description: 'For a ROLLOUT started with a rehearsal: that rehearsal, its prediction beside what happens.',
    resolve: (o, _, ctx) => (o.kind === 'ROLLOUT' ? ctx.rehearsals.ofRollout(o.id) : null),
  }),
);

const PlanChangeCodeEnum = builder.enumType('RehearsalPlanChangeCode', {
  description: 'The kind of a change since a rehearsal that changes its plan; docs/rehearsal.md "When a rehearsal is stale" has a row for each.',
  values: PLAN_CHANGE_CODES,
});

const PlanChangeType = builder.objectRef<PlanChange>('RehearsalPlanChange').implement({
  fields: (t) => ({
    code: t.expose('code', { type: PlanChangeCodeEnum }),
    nodeId: t.exposeID('nodeId', { nullable: true, description: 'The node it concerns; null for the settings and waves.' }),
    workload: t.exposeString('workload', { nullable: true, description: 'The VM, pod (namespace/name) or shard it concerns.' }),
    message: t.exposeString('message', { description: 'The node, the workload, and what it was and is, in words.' }),
  }),
});

builder.objectType(RehearsalStaleError, {
  name: 'RehearsalStaleError',
  description: 'startRollout(rehearsal:): the cluster changed since the rehearsal in a way that changes the plan; rehearse again.',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    rehearsalId: t.exposeID('rehearsalId'),
    changes: t.field({ type: [PlanChangeType], description: 'What changed, the most telling first.', resolve: (e) => e.changes }),
  }),
});

/** rollout:O2's refusals (as rolloutPlan), then a rehearsal already running (ConflictError). */
const REHEARSE_ERRORS = [NotFoundError, ConflictError, InvalidInputError];

builder.mutationField('rehearseRollout', (t) =>
  t.field({
    type: RehearsalType,
    description:
      'Rehearses startRollout(input) on a copy of the live cluster in virtual time (issue 33): answers at once with the RUNNING rehearsal; read it with rehearsal(id). A rollout of one node rehearses one maintenance or drain.',
    args: {
      input: t.arg({ type: StartInput, required: true }),
      samples: t.arg.int({ required: false, description: 'Seeded samples, 1–200 (default 20).' }),
      seed: t.arg.int({ required: false, description: 'Sample i runs with seed + i (default: random, recorded).' }),
    },
    errors: { types: REHEARSE_ERRORS },
    resolve: (_, args, ctx) =>
      audit(ctx, 'rehearseRollout', args, args.input.reason, (m) =>
        typedBackendCall(() => ctx.rehearsals.rehearse(toInput(args.input), { samples: args.samples ?? null, seed: args.seed ?? null }, m)),
      ),
  }),
);

builder.queryField('rehearsal', (t) =>
  t.field({
    type: RehearsalType,
    args: { id: t.arg.id({ required: true }) },
    errors: { types: [NotFoundError] },
    resolve: async (_, { id }, ctx) => {
      const found = await ctx.rehearsals.get(String(id));
      if (!found) throw new NotFoundError('rehearsal', String(id));
      return found;
    },
  }),
);

const badInput = (message: string) => new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } });

builder.queryField('rehearsals', (t) =>
  t.connection(
    {
      type: RehearsalType,
      description: `Rehearsals, newest first, forward pages (first ≤ ${PAGE.maxSize}, after).`,
      resolve: async (_, args, ctx) => {
        if (args.last != null || args.before != null) throw badInput('rehearsals pages forward only: use first and after');
        if (args.first != null && args.first < 0) throw badInput('first must not be negative');
        const first = Math.min(args.first ?? PAGE.defaultSize, PAGE.maxSize);
        const after = args.after ?? null;
        if (after !== null && !(await ctx.rehearsals.get(after))) throw badInput(`invalid cursor ${JSON.stringify(after.slice(0, 60))}`);
        const page = await ctx.rehearsals.list(first, after);
        const edges = page.rows.map((row) => ({ cursor: row.id, node: row }));
        return {
          edges,
          totalCount: page.totalCount,
          pageInfo: {
            hasNextPage: page.hasNextPage,
            hasPreviousPage: after !== null,
            startCursor: edges[0]?.cursor ?? null,
            endCursor: edges.at(-1)?.cursor ?? null,
          },
        };
      },
    },
    { name: 'RehearsalConnection' },
    { name: 'RehearsalEdge' },
  ),
);
