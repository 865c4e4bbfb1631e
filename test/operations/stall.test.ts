import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ShardSpec } from '../../plugins/fake/index.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { cluster, enable, maintenanceApp, whileDriving } from '../maintenance/harness.ts';
import { driveUntil, policyOf } from './drive.ts';

// Literals, not imported from the code under test: a changed value must fail here (issue 26).
const STALL_FLOOR_MS = 1_000;

/**
 * Issue 17, point 7: a step past twice its expected duration is said to be stalled (which
 * workload, since when, how far over), the ETA never lies in the past, and `force: true`
 * ends what a backend that never answers would otherwise hold for ever. Driven with the
 * simulated cluster's `stuck` fault on a virtual clock.
 */

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

const shard = (tenantId: string): ShardSpec => ({ tenantId, shardNumber: 0, shardCount: 4, attachedNodeId: '1', secondaries: [{ nodeId: '2' }] });
const STUCK = 'c-0004';

const OPERATION = `id state error stalled eta etaSeconds etaUnknownReason
  counts { planned moving moved skipped failed abandoned }
  waitingOn { kind description workloadIds since stalled { workloadKind workloadId action since expectedSeconds overSeconds } }`;

async function operation(id: string) {
  const res = await t.gql(`{ operation(id: "${id}") { ... on Operation { ${OPERATION} } } }`);
  return res.data.operation;
}

async function steps(id: string) {
  const res = await t.gql(`{ operation(id: "${id}") { ... on Operation {
    steps(first: 50) { edges { node { workloadId state reason error recheck { settled nodeId description } } } } } } }`);
  return res.data.operation.steps.edges.map((e: { node: unknown }) => e.node) as {
    workloadId: string;
    state: string;
    reason: string | null;
    error: string | null;
    recheck: { settled: boolean; nodeId: string | null; description: string } | null;
  }[];
}

async function events(operationId: string, type: string) {
  const res = await t.gql(`{ eventLog(operationId: "${operationId}", types: ["${type}"]) { events { type payload } } }`);
  return res.data.eventLog.events.map((e: { payload: object }) => e.payload);
}

/** Scrapes /metrics over HTTP (the app's own server, on a free loopback port). */
async function metric(name: string): Promise<string[]> {
  const { server } = t.app;
  if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return text.split('\n').filter((l) => l.startsWith(name));
}

async function startDrain(): Promise<string> {
  const res = await t.gql(`mutation { r: startNodeDrain(nodeId: "1") { ... on Operation { id } ... on Error { code message } } }`);
  return res.data.r.id;
}

async function cancel(extra = '') {
  const res = await t.gql(
    `mutation { r: cancelNodeDrain(nodeId: "1"${extra}) { __typename ... on Operation { ${OPERATION} } ... on Error { code message } } }`,
  );
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data.r;
}

function drainApp(settings: Record<string, number> = {}, cutOver = 30) {
  return createTestApp({
    topology: { nodes: [{ id: '1' }, { id: '2' }, { id: '3' }], shards: ['a', 'b', STUCK[0]!, 'd', 'e'].map(shard) },
    latenciesMs: { cutOver },
    settings,
  });
}

describe('a cut-over the backend never answers (the stuck fault)', () => {
  it('is stalled past twice the median of the finished cut-overs: named, since when, how far over; an event and a metric', async () => {
    t = await drainApp();
    t.cluster.simulation.injectFaults({ stuck: [STUCK] });
    const id = await startDrain();
    await driveUntil(t, async () => (await operation(id)).counts.moved === 4);
    const startedAt = t.clock.now();
    await t.clock.advance(30_000);
    const op = await operation(id);
    expect(op.state).toBe('RUNNING');
    expect(op.stalled).toBe(true);
    expect(op.waitingOn.workloadIds[0]).toBe(STUCK);
    expect(op.waitingOn.description).toContain(`STALLED: 1 step(s) past twice their expected duration: shard ${STUCK}`);
    const [stall] = op.waitingOn.stalled;
    expect(stall).toMatchObject({ workloadKind: 'shard', workloadId: STUCK, action: 'CUT_OVER', expectedSeconds: 0.03 });
    // How far over: from its start, less what it should have taken; it grows with the clock.
    expect(stall.overSeconds).toBeCloseTo((t.clock.now() - Date.parse(stall.since)) / 1000 - 0.03, 3);
    expect(Date.parse(stall.since)).toBeLessThanOrEqual(startedAt);
    // All that is left is stalled: no ETA, and why.
    expect(op).toMatchObject({ eta: null, etaSeconds: null, etaUnknownReason: 'STALLED' });
    await t.clock.advance(5_000);
    expect((await operation(id)).waitingOn.stalled[0].overSeconds).toBeCloseTo(stall.overSeconds + 5, 3);

    const [event] = await events(id, 'STEP_STALLED');
    expect(event).toMatchObject({ shard: STUCK, action: 'CUT_OVER', expectedMs: 30 });
    expect(event.overMs).toBeGreaterThan(0);
    expect(await metric('lockkeeper_steps_stalled_total{')).toContain('lockkeeper_steps_stalled_total{kind="DRAIN",workload="shard"} 1');
    // One stall, one event: looking again does not repeat it.
    expect(await events(id, 'STEP_STALLED')).toHaveLength(1);
  });

  it('the ETA grows with the stall and is never in the past', async () => {
    t = await drainApp({ maxConcurrentMoves: 1 });
    t.cluster.simulation.injectFaults({ stuck: [STUCK] });
    const id = await startDrain();
    // a and b cut over; c sticks; d and e wait behind it.
    await driveUntil(t, async () => (await operation(id)).counts.moved === 2);
    await t.clock.advance(1_000);
    const early = await operation(id);
    expect(early.stalled).toBe(true);
    expect(Date.parse(early.eta)).toBeGreaterThanOrEqual(t.clock.now());
    const earlyEta = Date.parse(early.eta);
    await t.clock.advance(60_000);
    const later = await operation(id);
    expect(later.counts).toMatchObject({ moved: 2, moving: 1, planned: 2 });
    expect(Date.parse(later.eta)).toBeGreaterThanOrEqual(t.clock.now());
    expect(Date.parse(later.eta)).toBeGreaterThan(earlyEta + 60_000);
    expect(later.etaSeconds).toBeGreaterThan(0);
    expect(later.etaUnknownReason).toBeNull();
  });

  it('a step inside twice its expected duration is not stalled; one past it is (the declared latency when nothing finished yet)', async () => {
    t = await drainApp({ maxConcurrentMoves: 1 }, 800);
    t.cluster.simulation.injectFaults({ stuck: ['a-0004'] });
    const id = await startDrain();
    await driveUntil(t, async () => (await operation(id)).counts.moving === 1, { stepMs: 1 });
    const [first] = await steps(id);
    expect(first!.workloadId).toBe('a-0004');
    const since = (await t.app.operations.getSteps(id)).find((s) => s.workloadId === 'a-0004')!.startedAt!;
    // Nothing finished: the simulated cluster's declared cut-over latency (800 ms) is the expectation.
    await t.clock.advance(since + 1_599 - t.clock.now());
    expect(await operation(id)).toMatchObject({ stalled: false, eta: null, etaUnknownReason: 'NOTHING_FINISHED' });
    await t.clock.advance(2);
    const op = await operation(id);
    expect(op.stalled).toBe(true);
    expect(op.waitingOn.stalled[0]).toMatchObject({ workloadId: 'a-0004', expectedSeconds: 0.8 });
    expect(op.etaUnknownReason).toBe('STALLED');
  });

  it('a step expected to take a few milliseconds is not stalled before the floor (domain/stall.ts STALL_FLOOR_MS)', async () => {
    t = await drainApp({ maxConcurrentMoves: 1 });
    t.cluster.simulation.injectFaults({ stuck: ['a-0004'] });
    const id = await startDrain();
    await driveUntil(t, async () => (await operation(id)).counts.moving === 1, { stepMs: 1 });
    const since = (await t.app.operations.getSteps(id)).find((s) => s.workloadId === 'a-0004')!.startedAt!;
    await t.clock.advance(since + STALL_FLOOR_MS - 1 - t.clock.now());
    expect((await operation(id)).stalled).toBe(false);
    await t.clock.advance(2);
    expect((await operation(id)).waitingOn.stalled[0]).toMatchObject({ workloadId: 'a-0004', expectedSeconds: 0.03 });
  });

  it('with no latency declared and nothing finished, operations.expectedStepMs is the expectation', async () => {
    t = await createTestApp({
      topology: { nodes: [{ id: '1' }, { id: '2' }], shards: [shard('a')] },
      latenciesMs: { cutOver: 30 },
      settings: { expectedStepMs: 10_000 },
      // A backend that declares nothing: the same cluster without its simulation controls.
      backend: (c) =>
        new Proxy(c, {
          get: (target, key) => {
            if (key === 'simulation') return undefined;
            const value: unknown = Reflect.get(target, key);
            return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
          },
        }),
    });
    t.cluster.simulation.injectFaults({ stuck: ['a-0004'] });
    const id = await startDrain();
    await driveUntil(t, async () => (await operation(id)).counts.moving === 1);
    await t.clock.advance(15_000);
    expect((await operation(id)).stalled).toBe(false);
    await t.clock.advance(6_000);
    expect((await operation(id)).waitingOn.stalled[0]).toMatchObject({ workloadId: 'a-0004', expectedSeconds: 10 });
  });

  it('a cancel waits in CANCELLING for ever; cancel with force ends it at once, the step ABANDONED and re-checked on each read', async () => {
    t = await drainApp();
    t.cluster.simulation.injectFaults({ stuck: [STUCK] });
    const id = await startDrain();
    await driveUntil(t, async () => (await operation(id)).counts.moved === 4);
    expect((await cancel()).state).toBe('CANCELLING');
    await t.clock.advance(60_000);
    expect((await operation(id)).state).toBe('CANCELLING');

    const forced = await cancel(', force: true, reason: "backend never answers"');
    expect(forced).toMatchObject({ __typename: 'Operation', state: 'CANCELLED', error: 'FORCED', stalled: false, waitingOn: null });
    expect(forced.counts).toMatchObject({ moved: 4, moving: 0, abandoned: 1 });
    expect(await policyOf(t, '1')).toBe('ACTIVE');
    expect(t.app.storage.activeOperation('1')).toBeNull();
    const abandoned = (await steps(id)).find((s) => s.workloadId === STUCK)!;
    expect(abandoned).toMatchObject({ state: 'ABANDONED', reason: 'FORCED', recheck: { settled: true, nodeId: '1' } });
    expect(abandoned.error).toContain(`cut-over of shard ${STUCK} from node 1 to node 2 in flight since`);
    expect(abandoned.error).toContain('stalled');
    expect(abandoned.recheck!.description).toBe('attached to node 1 (where it was)');
    expect(await events(id, 'STEP_ABANDONED')).toMatchObject([{ shard: STUCK, action: 'CUT_OVER', from: '1', to: '2' }]);
    expect(await metric('lockkeeper_steps_abandoned_total{')).toContain('lockkeeper_steps_abandoned_total{kind="DRAIN",workload="shard"} 1');
    // The other moves are recorded as they were; the steps are never rewritten afterwards.
    expect((await steps(id)).filter((s) => s.state === 'MOVED')).toHaveLength(4);

    // The backend answers after all: the operation stays ended, the re-check tells where the shard went.
    t.cluster.simulation.clearFaults();
    await driveUntil(t, async () => (await t.cluster.getShard(STUCK))!.attachedNodeId === '2');
    await t.clock.advance(1_000);
    const after = (await steps(id)).find((s) => s.workloadId === STUCK)!;
    expect(after).toMatchObject({ state: 'ABANDONED', recheck: { settled: true, nodeId: '2', description: 'attached to node 2 (where it was sent)' } });
    expect((await operation(id)).state).toBe('CANCELLED');
    // A new drain is accepted next.
    expect(await startDrain()).toBeTruthy();
  });

  it('force on a drain with nothing stuck ends it at once too: in-flight abandoned, the rest not attempted', async () => {
    t = await drainApp({ maxConcurrentMoves: 1 });
    t.cluster.simulation.setLatencies({ cutOver: 60_000 });
    const id = await startDrain();
    await driveUntil(t, async () => (await operation(id)).counts.moving === 1);
    const forced = await cancel(', force: true');
    expect(forced.counts).toMatchObject({ planned: 0, moving: 0, abandoned: 1, skipped: 4 });
    expect((await steps(id)).filter((s) => s.state === 'SKIPPED').map((s) => s.reason)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED', 'CANCELLED']);
  });
});

describe('disableMaintenanceMode with force', () => {
  it('records the stuck migration ABANDONED, re-checked against the VM, and ends the maintenance', async () => {
    t = await maintenanceApp(cluster([{ namespace: 'default', name: 'stuck', nodeId: '1' }]));
    t.cluster.simulation.injectFaults({ stuck: ['default/stuck'] });
    const { id } = await enable(t, '1');
    await driveUntil(t, async () => (await operation(id)).stalled === true);
    const op = await operation(id);
    expect(op.waitingOn.stalled[0]).toMatchObject({ workloadKind: 'vm', workloadId: 'default/stuck', action: 'MIGRATE', expectedSeconds: 0.5 });
    expect(await metric('lockkeeper_steps_stalled_total{')).toContain('lockkeeper_steps_stalled_total{kind="MAINTENANCE",workload="vm"} 1');

    const res = await whileDriving(
      t,
      t.gql(`mutation { r: disableMaintenanceMode(nodeId: "1", force: true) {
        __typename ... on DisableMaintenanceResult { warnings } ... on Error { code message } } }`),
    );
    expect(res.data.r.__typename).toBe('DisableMaintenanceResult');
    expect(res.data.r.warnings.join('\n')).toContain('were abandoned (force: true');
    expect(await operation(id)).toMatchObject({ state: 'CANCELLED', counts: { abandoned: 1, moving: 0 } });
    const [step] = await steps(id);
    expect(step).toMatchObject({ workloadId: 'default/stuck', state: 'ABANDONED', reason: 'FORCED', recheck: { nodeId: '1' } });
    expect(step!.error).toContain('migrate of VM default/stuck');
  });
});
