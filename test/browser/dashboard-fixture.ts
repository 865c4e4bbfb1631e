/**
 * A fixed cluster for the dashboard's layout and screenshot tests (issue 31, points 2, 5, 7):
 * the answers to its GraphQL documents, with fixed ids and times, served to the page in
 * place of the gateway's, and a clock fixed at NOW. The static files still come from a real
 * gateway (so its Content-Security-Policy applies); the test forces the font, DejaVu Sans,
 * which `.ci/run` installs (Debian's fonts-dejavu-core).
 */
import type { Page } from 'playwright-core';

const NOW = '2026-01-15T09:30:00.000Z';

/** Fixed ids, as different in their first eight characters (what the table shows) as real ones are. */
const OP = (n: number) => `${(0x3b1e5c7a + n * 0x1f3a29).toString(16).slice(-8)}-4d2f-4e61-9a3b-0000000000${String(n).padStart(2, '0')}`;

interface FixtureNode {
  id: string;
  name: string;
  zone: string;
  availability?: string;
  cordoned?: boolean;
  schedulingPolicy?: string;
  maintenancePhase?: string | null;
  operation?: { id: string; kind: string; state: string } | null;
  remaining?: number;
}

function node(n: FixtureNode) {
  const remaining = n.remaining ?? 0;
  return {
    node: {
      id: n.id,
      name: n.name,
      zone: n.zone,
      roles: ['worker', 'storage'],
      availability: n.availability ?? 'ACTIVE',
      cordoned: n.cordoned ?? false,
      schedulingPolicy: n.schedulingPolicy ?? 'ACTIVE',
      maintenancePhase: n.maintenancePhase ?? null,
      operation: n.operation ?? null,
      safeToRestart: remaining === 0,
      remainingWorkloads: Array.from({ length: remaining }, (_, i) => ({ kind: 'SHARD', id: `t${n.id}-${i}`, reason: 'attached here' })),
    },
  };
}

const counts = (c: Partial<Record<'planned' | 'moving' | 'moved' | 'stopped' | 'skipped' | 'failed' | 'abandoned' | 'total', number>>) => ({
  planned: 0,
  moving: 0,
  moved: 0,
  stopped: 0,
  skipped: 0,
  failed: 0,
  abandoned: 0,
  total: 0,
  ...c,
});

function operation(o: Record<string, unknown>) {
  return {
    node: {
      nodeId: null,
      reason: null,
      error: null,
      finishedAt: null,
      startedBy: 'alice',
      etaSeconds: null,
      etaUnknownReason: null,
      etaOverdueSeconds: null,
      stalled: false,
      waitingOn: null,
      abandonedSteps: { edges: [] },
      rollout: null,
      ...o,
      createdAt: o.startedAt,
    },
  };
}

/** One operation in each state the dashboard tells apart, newest first. */
const OPERATIONS = [
  operation({
    id: OP(28),
    kind: 'ROLLOUT',
    state: 'RUNNING',
    reason: 'firmware 2.4',
    startedAt: '2026-01-15T09:20:00.000Z',
    counts: counts({ moved: 3, moving: 2, planned: 5, total: 10 }),
    etaSeconds: 540,
    waitingOn: { description: 'node-1: maintenance, 2 VMs migrating', since: '2026-01-15T09:26:00.000Z', stalled: [] },
    rollout: {
      currentWave: 1,
      nodesDone: 0,
      nodesTotal: 2,
      settings: { action: 'MAINTENANCE', restart: 'WAIT_FOR_REATTACH', maxUnavailable: 1 },
      nodes: [
        { nodeId: '1', phase: 'MAINTENANCE', wave: 1 },
        { nodeId: '2', phase: 'PENDING', wave: 2 },
      ],
    },
  }),
  operation({
    id: OP(27),
    kind: 'DRAIN',
    nodeId: '3',
    state: 'RUNNING',
    stalled: true,
    startedBy: 'bob',
    reason: 'disk swap',
    startedAt: '2026-01-15T09:10:00.000Z',
    counts: counts({ moved: 1, moving: 2, total: 3 }),
    etaUnknownReason: 'STALLED',
    waitingOn: {
      description: '2 cut-overs in flight',
      since: '2026-01-15T09:12:00.000Z',
      stalled: [{ workloadKind: 'shard', workloadId: 't7', action: 'CUT_OVER', since: '2026-01-15T09:12:00.000Z', expectedSeconds: 30, overSeconds: 1050 }],
    },
  }),
  operation({
    id: OP(26),
    kind: 'ROLLOUT',
    state: 'PAUSED',
    reason: 'kernel 6.12',
    startedAt: '2026-01-15T08:40:00.000Z',
    counts: counts({ moved: 4, total: 8, planned: 4 }),
    waitingOn: { description: 'paused by carol: waiting for the storage team', since: '2026-01-15T08:55:00.000Z', stalled: [] },
    rollout: {
      currentWave: 2,
      nodesDone: 1,
      nodesTotal: 2,
      settings: { action: 'DRAIN_FILL', restart: 'NONE', maxUnavailable: 1 },
      nodes: [
        { nodeId: '2', phase: 'DONE', wave: 1 },
        { nodeId: '4', phase: 'PENDING', wave: 2 },
      ],
    },
  }),
  operation({
    id: OP(25),
    kind: 'DRAIN',
    nodeId: '4',
    state: 'CANCELLED',
    error: 'FORCED',
    reason: 'cut-over hangs',
    startedAt: '2026-01-15T08:20:00.000Z',
    finishedAt: '2026-01-15T08:31:12.000Z',
    counts: counts({ moved: 9, abandoned: 1, total: 10 }),
    abandonedSteps: {
      edges: [
        {
          node: {
            workloadKind: 'shard',
            workloadId: 't12',
            action: 'CUT_OVER',
            error: 'abandoned by a forced cancel',
            recheck: { settled: true, nodeId: '2', description: 'attached to node 2' },
          },
        },
      ],
    },
  }),
  operation({
    id: OP(24),
    kind: 'FILL',
    nodeId: '2',
    state: 'CANCELLED',
    startedBy: 'carol',
    startedAt: '2026-01-15T08:05:00.000Z',
    finishedAt: '2026-01-15T08:05:02.000Z',
    counts: counts({}),
  }),
  operation({
    id: OP(23),
    kind: 'MAINTENANCE',
    nodeId: '4',
    state: 'FAILED',
    error: 'NODE_OFFLINE',
    reason: 'PSU replacement',
    startedAt: '2026-01-15T07:50:00.000Z',
    finishedAt: '2026-01-15T07:58:40.000Z',
    counts: counts({ moved: 2, failed: 1, total: 4, planned: 1 }),
    // An out-of-date waiting-on the page must not show for a FAILED operation.
    waitingOn: { description: 'OLD: migrating 2 VMs', since: '2026-01-15T07:51:00.000Z', stalled: [] },
  }),
  operation({
    id: OP(22),
    kind: 'DRAIN',
    nodeId: '2',
    state: 'SUCCEEDED',
    reason: 'rebalance',
    startedAt: '2026-01-15T07:30:00.000Z',
    finishedAt: '2026-01-15T07:33:05.000Z',
    counts: counts({ moved: 3, total: 3 }),
  }),
];

const FOUR_NODES = [
  node({
    id: '1',
    name: 'node-1',
    zone: 'zone-a',
    cordoned: true,
    schedulingPolicy: 'PAUSE',
    maintenancePhase: 'EVACUATING',
    operation: { id: 'm-1', kind: 'MAINTENANCE', state: 'RUNNING' },
    remaining: 2,
  }),
  node({ id: '2', name: 'node-2', zone: 'zone-a', remaining: 3 }),
  node({ id: '3', name: 'node-3', zone: 'zone-b', operation: { id: OP(27), kind: 'DRAIN', state: 'RUNNING' }, remaining: 2 }),
  node({ id: '4', name: 'node-4', zone: 'zone-b', availability: 'OFFLINE', schedulingPolicy: 'PAUSE_FOR_RESTART' }),
];

/** 50 nodes in three zones, with long host names among them. */
const FIFTY_NODES = Array.from({ length: 50 }, (_, i) => {
  const id = String(i + 1);
  const zone = ['zone-a', 'zone-b', 'zone-c'][i % 3]!;
  const name = i % 5 === 4 ? `storage-eu-west-1${'abc'[i % 3]}-${id.padStart(3, '0')}` : `node-${id}`;
  return node({
    id,
    name,
    zone,
    ...(i % 7 === 3 && { maintenancePhase: 'PAUSE_FOR_RESTART', schedulingPolicy: 'PAUSE', cordoned: true }),
    ...(i % 11 === 5 && { operation: { id: `o-${id}`, kind: 'DRAIN', state: 'RUNNING' } }),
    remaining: i % 4,
  });
});

export type FixtureSize = 4 | 50;
type Scope = 'ADMIN' | 'VIEWER';

function dashboardAnswer(size: FixtureSize, scope: Scope = 'ADMIN') {
  return {
    data: {
      caller: { name: scope === 'ADMIN' ? 'alice' : 'wall-screen', scope },
      nodes: { edges: size === 4 ? FOUR_NODES : FIFTY_NODES },
      operations: {
        totalCount: 28,
        pageInfo: { hasNextPage: true, hasPreviousPage: false, startCursor: 'c28', endCursor: 'c22' },
        edges: OPERATIONS,
      },
    },
  };
}

/**
 * Serves the fixture to `page` at `base`: the GraphQL answers, a WebSocket that acknowledges
 * and stays quiet (the view is live, nothing changes), the clock fixed at NOW, and the font.
 */
export async function serveFixture(page: Page, base: string, size: FixtureSize, scope: Scope = 'ADMIN'): Promise<void> {
  await page.clock.setFixedTime(new Date(NOW));
  await page.route(`${base}/graphql`, async (route) => {
    const body = route.request().postDataJSON() as { query: string };
    const name = /^\s*query (\w+)/.exec(body.query)?.[1];
    const answer =
      name === 'Dashboard' ? dashboardAnswer(size, scope) : name === 'Caller' ? { data: { caller: dashboardAnswer(size, scope).data.caller } } : null;
    if (!answer) return route.fulfill({ status: 400, json: { errors: [{ message: `the fixture does not answer ${name}` }] } });
    return route.fulfill({ json: answer });
  });
  await page.routeWebSocket(`${base.replace(/^http/, 'ws')}/graphql`, (ws) => {
    ws.onMessage((message) => {
      if (JSON.parse(String(message)).type === 'connection_init') ws.send(JSON.stringify({ type: 'connection_ack' }));
    });
  });
  await page.route(`${base}/dashboard/style.css`, async (route) => {
    const response = await route.fetch();
    await route.fulfill({ response, body: `${await response.text()}\nbody { font-family: 'DejaVu Sans'; }\n` });
  });
}
