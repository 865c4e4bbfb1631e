import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { driveUntil } from './drive.ts';
import { etaText } from '../../src/domain/durations.ts';
import { operationEta, WEB_DOCUMENTS } from '../../src/web/documents.ts';

/** The ETA cell the dashboard shows for the operation, from the dashboard's own query. */
async function dashboardEta(id: string): Promise<string> {
  const res = await t.gql(WEB_DOCUMENTS.dashboard);
  const op = res.data.operations.edges.map((e: { node: { id: string } }) => e.node).find((o: { id: string }) => o.id === id);
  return operationEta(op);
}

/**
 * Issue 30, point 3: while an operation or rollout runs, its ETA is never before now; once
 * the estimate it gave at its last progress has passed, `etaOverdueSeconds` says by how
 * much, and the text the CLI and the dashboard show reads `over by …` (or `stalled`), never
 * a time in the past. On a virtual clock, with one move the simulated cluster never ends
 * (the `stuck` fault).
 */

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

const FIELDS = 'id kind state stalled eta etaSeconds etaUnknownReason etaOverdueSeconds counts { planned moving moved }';

async function operation(id: string) {
  const res = await t.gql(`{ operation(id: "${id}") { ... on Operation { ${FIELDS} } } }`);
  return res.data.operation;
}

/** The ETA is never before the virtual now, whatever else is shown. */
async function checked(id: string) {
  const op = await operation(id);
  expect(op.state).toBe('RUNNING');
  if (op.eta !== null) expect(Date.parse(op.eta)).toBeGreaterThanOrEqual(t.clock.now());
  if (op.etaSeconds !== null) expect(op.etaSeconds).toBeGreaterThanOrEqual(0);
  return op;
}

/** Runs until the estimate made at the last progress has passed, then checks it is reported as exceeded and grows with the clock. */
async function overdueGrows(id: string) {
  await driveUntil(t, async () => (await checked(id)).etaOverdueSeconds !== null, { stepMs: 1_000, maxMs: 300_000 });
  const first = await checked(id);
  expect(first.etaOverdueSeconds).toBeGreaterThan(0);
  await t.clock.advance(65_000);
  const later = await checked(id);
  expect(later.etaOverdueSeconds - first.etaOverdueSeconds).toBeCloseTo(65, 3);
  return later;
}

const shard = (tenantId: string, node: string) => ({ tenantId, attachedNodeId: node, secondaries: [{ nodeId: '3' }] });

describe('ETA never in the past; an exceeded estimate is said to be exceeded (issue 30, point 3)', () => {
  it('a drain: ETA ≥ now at every instant; past its estimate it reads "over by" (stalled while the stuck cut-over is all that moves)', async () => {
    t = await createTestApp({
      topology: { nodes: [{ id: '1' }, { id: '2' }, { id: '3' }], shards: ['a', 'b', 'c', 'd'].map((x) => shard(x, '1')) },
      latenciesMs: { cutOver: 10_000 },
      settings: { maxConcurrentMoves: 1 },
    });
    t.cluster.simulation.injectFaults({ stuck: ['c'] });
    const res = await t.gql(`mutation { r: startNodeDrain(nodeId: "1") { ... on Operation { id } } }`);
    const id = res.data.r.id;
    await driveUntil(t, async () => (await checked(id)).counts.moved === 2, { stepMs: 500 });
    const running = await checked(id);
    expect(running.etaOverdueSeconds).toBeNull();
    expect(etaText(running)).toMatch(/^\d+s$|^\dm\d\ds$/);
    expect(await dashboardEta(id)).toMatch(/^ETA (\d+s|\dm\d\ds)$/);
    const later = await overdueGrows(id);
    expect(later.stalled).toBe(true);
    expect(etaText(later)).toMatch(/^stalled, over by \dm\d\ds$/);
    expect(await dashboardEta(id)).toMatch(/^stalled, over by \dm\d\ds$/);
  });

  it('a maintenance: ETA ≥ now; past its estimate "over by"', async () => {
    t = await createTestApp({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
        vms: ['a', 'b', 'c'].map((name) => ({ namespace: 'prod', name, nodeId: '1' })),
      },
      latenciesMs: { migrate: 10_000, cordon: 10, stop: 100, start: 100 },
      settings: { maxParallelMigrations: 1 },
    });
    t.cluster.simulation.injectFaults({ stuck: ['prod/b'] });
    const res = await t.gql(`mutation { r: enableMaintenanceMode(nodeId: "1") { __typename ... on Operation { id } ... on Error { code message } } }`);
    const id = res.data.r.id;
    expect(id).toBeDefined();
    await driveUntil(t, async () => (await checked(id)).counts.moved === 1, { stepMs: 500 });
    expect((await checked(id)).etaOverdueSeconds).toBeNull();
    const later = await overdueGrows(id);
    expect(etaText(later)).toMatch(/over by \dm\d\ds$/);
    expect(await dashboardEta(id)).toMatch(/over by \dm\d\ds$/);
  });

  it('a rollout: ETA ≥ now while its second node drains; past its estimate "over by"', async () => {
    t = await createTestApp({
      topology: {
        nodes: ['1', '2', '3'].map((id) => ({ id, roles: ['storage'] })),
        shards: [shard('a', '1'), shard('b', '2'), shard('c', '2')],
      },
      latenciesMs: { cutOver: 10_000, cordon: 10 },
      settings: { maxConcurrentMoves: 1 },
    });
    t.cluster.simulation.injectFaults({ stuck: ['c'] });
    const res = await t.gql(
      `mutation { r: startRollout(input: { nodes: ["1", "2"], action: DRAIN_FILL, restart: NONE }) { __typename ... on Operation { id } ... on Error { code message } } }`,
    );
    const id = res.data.r.id;
    expect(id).toBeDefined();
    await driveUntil(t, async () => (await checked(id)).counts.moved === 1, { stepMs: 500 });
    const later = await overdueGrows(id);
    expect(later.kind).toBe('ROLLOUT');
    expect(etaText(later)).toMatch(/over by \dm\d\ds$/);
    expect(await dashboardEta(id)).toMatch(/over by \dm\d\ds$/);
  });
});

describe('durations and ETAs as printed (issue 30, points 2 and 3)', () => {
  it('rounds before splitting: never 2m60s nor 1h60m', async () => {
    const { formatDuration } = await import('../../src/domain/durations.ts');
    expect([0, 42.4, 59.6, 65, 179.6, 3599.4, 3599.6, 7380, 7409, 86_399].map(formatDuration)).toEqual([
      '0s',
      '42s',
      '1m00s',
      '1m05s',
      '3m00s',
      '59m59s',
      '1h00m',
      '2h03m',
      '2h03m',
      '24h00m',
    ]);
  });

  it('a shown ETA counts down, then reads "over by", never a time in the past', () => {
    expect(etaText({ etaSeconds: 90 }, 30)).toBe('1m00s');
    expect(etaText({ etaSeconds: 90 }, 155)).toBe('over by 1m05s');
    expect(etaText({ etaSeconds: 0, etaOverdueSeconds: 10 }, 55)).toBe('over by 1m05s');
    expect(etaText({ etaSeconds: null, etaUnknownReason: 'STALLED', stalled: true })).toBe('stalled');
    expect(etaText({ etaSeconds: null, etaUnknownReason: 'NOTHING_FINISHED' })).toBe('--');
  });
});
