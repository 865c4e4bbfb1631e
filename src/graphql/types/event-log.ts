import type { Event } from '../../store/index.ts';
import type { EventFilter } from '../../store/event-log.ts';
import { builder, PAGE } from '../builder.ts';
import type { GraphQLContext } from '../context.ts';

const LogEventType = builder.objectRef<Event>('LogEvent').implement({
  description: 'One entry of the append-only event log: every state change, in order.',
  fields: (t) => ({
    seq: t.exposeInt('seq', { description: 'The cursor: pass it as `after` to continue from here.' }),
    at: t.field({ type: 'DateTime', resolve: (e) => e.at }),
    type: t.exposeString('type', { description: 'e.g. NODE_POLICY_CHANGED, MAINTENANCE_PHASE_CHANGED, OPERATION_STARTED, SHARD_MOVED, VM_MIGRATE_MOVED.' }),
    nodeId: t.exposeID('nodeId', { nullable: true }),
    operationId: t.exposeID('operationId', { nullable: true }),
    payload: t.field({
      type: 'JSON',
      description:
        'The details, a JSON object (its fields depend on `type`). Earlier versions sent a JSON-encoded string that clients parsed: a breaking change for scripts (docs/operations.md, *Event log*).',
      resolve: (e) => JSON.parse(e.payload) as unknown,
    }),
  }),
});

const PageType = builder.objectRef<{ events: Event[]; nextCursor: number; hasMore: boolean }>('EventLogPage').implement({
  fields: (t) => ({
    events: t.field({ type: [LogEventType], resolve: (p) => p.events }),
    nextCursor: t.exposeInt('nextCursor', { description: 'The `after` for the next page (the last seq seen).' }),
    hasMore: t.exposeBoolean('hasMore'),
  }),
});

type FilterArgs = { after?: number | null; nodeId?: string | number | null; operationId?: string | number | null; types?: string[] | null };

function filterOf(args: FilterArgs): EventFilter {
  return {
    ...(args.after != null && { after: args.after }),
    ...(args.nodeId != null && { nodeId: String(args.nodeId) }),
    ...(args.operationId != null && { operationId: String(args.operationId) }),
    ...(args.types != null && { types: args.types }),
  };
}

builder.queryField('eventLog', (t) =>
  t.field({
    type: PageType,
    description: 'The event log from a cursor, oldest first.',
    args: {
      after: t.arg.int({ required: false, description: 'Only events after this seq.' }),
      nodeId: t.arg.id({ required: false }),
      operationId: t.arg.id({ required: false }),
      types: t.arg.stringList({ required: false }),
      first: t.arg.int({ required: false, defaultValue: 100 }),
    },
    resolve: async (_, args, ctx) => {
      const first = Math.min(Math.max(1, args.first ?? 100), PAGE.maxSize);
      await ctx.operations.writeQueued();
      const rows = await ctx.events.read(filterOf(args), first + 1);
      const events = rows.slice(0, first);
      return { events, nextCursor: events.at(-1)?.seq ?? args.after ?? 0, hasMore: rows.length > first };
    },
  }),
);

/** How often a live event-log subscription looks for new entries when no wake-up came (ha:E1: commits wake it at once). */
const POLL_MS = 1000;

builder.subscriptionField('eventLog', (t) =>
  t.field({
    type: LogEventType,
    description:
      'Every event after `after` (replayed from the log), then new ones as they are written; without `after`, only new ones. Reconnect with the last seq to resume without gaps.',
    args: {
      after: t.arg.int({ required: false, description: 'Replay from after this seq; omit for new events only.' }),
      nodeId: t.arg.id({ required: false }),
      operationId: t.arg.id({ required: false }),
      types: t.arg.stringList({ required: false }),
    },
    subscribe: (_, args, ctx) => tail(ctx, args),
    resolve: (e) => e,
  }),
);

async function* tail(ctx: GraphQLContext, args: FilterArgs): AsyncGenerator<Event> {
  const filter = filterOf(args);
  let after = filter.after ?? (await answered(ctx, () => ctx.events.latestSeq()));
  for (;;) {
    const rows = await answered(ctx, () => ctx.events.read({ ...filter, after }, 500));
    for (const row of rows) {
      after = row.seq;
      yield row;
    }
    if (rows.length < 500) await ctx.eventWakeup.wait(POLL_MS);
  }
}

/**
 * A read of the log that waits out a database outage (issue 27): the subscription stays open
 * and reads again from the same cursor once the database answers, so nothing is lost or
 * repeated. Other errors end it.
 */
async function answered<T>(ctx: GraphQLContext, read: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await read();
    } catch (e) {
      if (!ctx.database?.isOutage(e)) throw e;
      await ctx.database.whenUp(POLL_MS);
    }
  }
}
