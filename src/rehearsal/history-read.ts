import { historyFromSteps, type HistoryEvent } from '../domain/rehearsal/history.ts';
import { POD_EVICTION_EVENTS, podEvictionsFromEvents } from '../domain/rehearsal/pod-evictions.ts';
import type { HistoryRecord } from '../domain/rehearsal/types.ts';
import type { PrismaClient } from '../store/index.ts';

/** How many finished steps and events the history reads at most (the newest): bounds the request the worker gets. */
const HISTORY_LIMIT = 50_000;

/** The events a node restart's duration is read from (historyFromSteps). */
const RESTART_EVENTS = [
  'ROLLOUT_NODE_AWAITING_RESTART',
  'ROLLOUT_NODE_AWAITING_CONFIRM',
  'ROLLOUT_NODE_RESTARTED',
  'ROLLOUT_NODE_FAILED',
  'ROLLOUT_NODE_SKIPPED',
  'NODE_STATE_CHANGED',
];

const ms = (d: Date | null) => (d === null ? null : d.getTime());
const EVENT_FIELDS = { type: true, nodeId: true, operationId: true, at: true, payload: true } as const;
/** The log's rows, newest first as read, in log order with their payloads parsed. */
const inLogOrder = (rows: { type: string; nodeId: string | null; operationId: string | null; at: Date; payload: string }[]): HistoryEvent[] =>
  rows.reverse().map((e) => ({ type: e.type, nodeId: e.nodeId, operationId: e.operationId, at: e.at.getTime(), payload: JSON.parse(e.payload) as unknown }));

/** A rehearsal's history (issue 33): the durations of earlier real runs, read from the steps and the event log. */
export async function readHistory(prisma: PrismaClient): Promise<HistoryRecord[]> {
  const [steps, events, podEvents] = await Promise.all([
    prisma.operationStep.findMany({
      where: { state: { in: ['MOVED', 'STOPPED'] }, startedAt: { not: null }, finishedAt: { not: null } },
      select: { workloadKind: true, workloadId: true, action: true, state: true, fromNodeId: true, startedAt: true, finishedAt: true },
      orderBy: { finishedAt: 'desc' },
      take: HISTORY_LIMIT,
    }),
    prisma.event.findMany({
      where: { type: { in: RESTART_EVENTS } },
      select: EVENT_FIELDS,
      orderBy: { seq: 'desc' },
      take: HISTORY_LIMIT,
    }),
    prisma.event.findMany({
      where: { type: { in: [...POD_EVICTION_EVENTS] } },
      select: EVENT_FIELDS,
      orderBy: { seq: 'desc' },
      take: HISTORY_LIMIT,
    }),
  ]);
  // Pod evictions of the pod drain (k8s:K5–K8): from the eviction to the pod seen gone.
  return [
    ...historyFromSteps(
      steps.map((s) => ({ ...s, startedAt: ms(s.startedAt), finishedAt: ms(s.finishedAt) })),
      inLogOrder(events),
    ),
    ...podEvictionsFromEvents(inLogOrder(podEvents)),
  ];
}
