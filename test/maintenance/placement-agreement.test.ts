/**
 * The plan predicts where a VM goes (and vm:N3: whether it can go anywhere); the simulated
 * cluster decides where it actually goes. Both must agree, and both must follow
 * Kubernetes. Checked against a model written here from the Kubernetes API reference,
 * sharing no code with src/domain/placement.ts, so a mistake in the shared rule cannot
 * hide by appearing on both sides.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSimulatedCluster, type NodeSpec, type VmSpec } from '../../plugins/fake/index.ts';
import { pickNode as fakePickNode } from '../../plugins/fake/scheduling.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import { isBackendError } from '../../src/cluster/errors.ts';
import type { ClusterNode, ClusterVm, NodeAvailability } from '../../src/cluster/types.ts';
import { nonMigratableReasons } from '../../src/domain/vm/migratability.ts';
import { pickTargetNode } from '../../src/domain/vm/scheduling.ts';
import type { MaintNode, MaintVm } from '../../src/domain/vm/types.ts';

// ------------------------------------------------------------------ the model

type Operator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
interface ModelRequirement {
  key: string;
  operator: Operator;
  values: string[];
}
interface ModelConstraints {
  nodeSelector: Record<string, string>;
  requiredNodeAffinity: { matchExpressions: ModelRequirement[] }[];
}
interface ModelNode {
  id: string;
  labels: Record<string, string>;
  /** ACTIVE, uncordoned (and, for the planner, not in maintenance). */
  schedulable: boolean;
}

/**
 * Kubernetes, restated: the node's labels as a map of its own keys. nodeSelector: each
 * pair present and equal. Required affinity: no terms = no constraint; otherwise some term
 * whose expressions are all true, and a term without expressions is never true. NotIn and
 * DoesNotExist are true where the key is absent.
 */
function modelAllows(node: ModelNode, c: ModelConstraints): boolean {
  const labels = new Map(Object.entries(node.labels));
  for (const key of Object.keys(c.nodeSelector)) {
    if (!labels.has(key) || labels.get(key) !== c.nodeSelector[key]) return false;
  }
  if (c.requiredNodeAffinity.length === 0) return true;
  let anyTerm = false;
  for (const term of c.requiredNodeAffinity) {
    if (term.matchExpressions.length === 0) continue;
    let all = true;
    for (const r of term.matchExpressions) {
      const present = labels.has(r.key);
      const listed = present && r.values.indexOf(labels.get(r.key)!) !== -1;
      const holds = r.operator === 'In' ? listed : r.operator === 'NotIn' ? !listed : r.operator === 'Exists' ? present : !present;
      if (!holds) all = false;
    }
    if (all) anyTerm = true;
  }
  return anyTerm;
}

/** Node ids here are decimal numbers, so the model orders them by value without a collator. */
function modelPick(nodes: readonly ModelNode[], c: ModelConstraints, load: (id: string) => number, exclude: string | null): string | null {
  const fits = nodes.filter((n) => n.id !== exclude && n.schedulable && modelAllows(n, c));
  fits.sort((a, b) => load(a.id) - load(b.id) || Number(a.id) - Number(b.id));
  return fits[0]?.id ?? null;
}

// ------------------------------------------------------------------ generators

const KEYS = ['zone', 'disk', 'gpu', 'rack'] as const;
const VALUES = ['a', 'b', 'c'];
// Keys a node never carries, two of them found on every object's prototype.
const SELECTOR_KEYS = [...KEYS, 'constructor', 'toString', 'absent'];

const labelsArb = fc
  .subarray([...KEYS])
  .chain((keys) => fc.tuple(...keys.map((k) => fc.constantFrom(...VALUES).map((v) => [k, v] as const))))
  .map((pairs) => Object.fromEntries(pairs) as Record<string, string>);

const requirementArb: fc.Arbitrary<ModelRequirement> = fc
  .record({
    key: fc.constantFrom(...SELECTOR_KEYS),
    operator: fc.constantFrom<Operator>('In', 'NotIn', 'Exists', 'DoesNotExist'),
    values: fc.subarray(VALUES, { minLength: 1 }),
  })
  .map((r) => (r.operator === 'Exists' || r.operator === 'DoesNotExist' ? { ...r, values: [] } : r));

const constraintsArb: fc.Arbitrary<ModelConstraints> = fc.record({
  nodeSelector: fc.oneof(
    { weight: 3, arbitrary: fc.constant<Record<string, string>>({}) },
    fc.dictionary(fc.constantFrom(...SELECTOR_KEYS), fc.constantFrom(...VALUES), { maxKeys: 2 }),
  ),
  requiredNodeAffinity: fc.oneof(
    { weight: 2, arbitrary: fc.constant<ModelConstraints['requiredNodeAffinity']>([]) },
    fc.array(fc.record({ matchExpressions: fc.array(requirementArb, { maxLength: 3 }) }), { minLength: 1, maxLength: 3 }),
  ),
});

interface GenNode {
  id: string;
  labels: Record<string, string>;
  availability: NodeAvailability;
  cordoned: boolean;
  load: number;
}

/** 1–8 nodes whose ids are drawn from 1..12, so that 10, 11 and 12 meet 2 and 9 (natural order). */
const nodesArb: fc.Arbitrary<GenNode[]> = fc.uniqueArray(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 8 }).chain((ids) =>
  fc.tuple(
    ...ids.map((id) =>
      fc.record({
        id: fc.constant(String(id)),
        labels: labelsArb,
        availability: fc.constantFrom<NodeAvailability>('ACTIVE', 'ACTIVE', 'ACTIVE', 'WARMING_UP', 'OFFLINE'),
        cordoned: fc.constantFrom(false, false, true),
        load: fc.nat(3),
      }),
    ),
  ),
);

const toClusterNode = (n: GenNode): ClusterNode => ({
  id: n.id,
  name: `node-${n.id}`,
  zone: null,
  roles: ['worker'],
  availability: n.availability,
  cordoned: n.cordoned,
  labels: n.labels,
});
const toMaintNode = (n: GenNode): MaintNode => ({
  id: n.id,
  name: `node-${n.id}`,
  ready: n.availability === 'ACTIVE',
  cordoned: n.cordoned,
  roles: ['worker'],
  labels: n.labels,
  maintenancePhase: null,
});
const toModelNode = (n: { id: string; labels: Record<string, string>; availability: NodeAvailability; cordoned: boolean }): ModelNode => ({
  id: n.id,
  labels: n.labels,
  schedulable: n.availability === 'ACTIVE' && !n.cordoned,
});

function maintVm(c: ModelConstraints, nodeId: string): MaintVm {
  return {
    id: 'ns/vm',
    namespace: 'ns',
    name: 'vm',
    nodeId,
    runStrategy: 'Always',
    status: 'Running',
    maintenanceStrategyLabel: null,
    volumes: [],
    liveMigratable: true,
    liveMigratableReason: null,
    nodeSelector: c.nodeSelector,
    requiredNodeAffinity: c.requiredNodeAffinity,
    tracking: null,
  };
}

// ------------------------------------------------------------------ the properties

describe('placement: the plan, the simulated cluster and the Kubernetes model agree', () => {
  it('on the target node, and on whether there is one (vm:N3)', () => {
    fc.assert(
      fc.property(nodesArb, constraintsArb, fc.nat(7), (nodes, c, fromIndex) => {
        const from = nodes[fromIndex % nodes.length]!.id;
        const load = (id: string) => nodes.find((n) => n.id === id)!.load;
        const expected = modelPick(nodes.map(toModelNode), c, load, from);

        const planned = pickTargetNode(c, nodes.map(toMaintNode), new Map(nodes.map((n) => [n.id, n.load])), from);
        const simulated = fakePickNode(nodes.map(toClusterNode), c, load, from);
        expect(planned?.id ?? null).toBe(expected);
        expect(simulated?.id ?? null).toBe(expected);

        const n3 = nonMigratableReasons(maintVm(c, from), from, nodes.map(toMaintNode)).some((r) => r.code === 'NodeSchedulingRequirementsNotMet');
        expect(n3).toBe(expected === null);
      }),
      { seed: 20260110, numRuns: 2000 },
    );
  });

  it('the plan never places a VM on a node in maintenance, whatever its labels', () => {
    fc.assert(
      fc.property(nodesArb, constraintsArb, fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }), (nodes, c, inMaintenance) => {
        const maintNodes = nodes.map((n, i) => ({ ...toMaintNode(n), maintenancePhase: inMaintenance[i] ? ('DRAINING' as const) : null }));
        const planned = pickTargetNode(c, maintNodes, new Map(), null);
        const expected = modelPick(
          nodes.map((n, i) => ({ ...toModelNode(n), schedulable: toModelNode(n).schedulable && !inMaintenance[i] })),
          c,
          () => 0,
          null,
        );
        expect(planned?.id ?? null).toBe(expected);
      }),
      { seed: 20260111, numRuns: 500 },
    );
  });
});

// ------------------------------------------------------------------ end to end on the simulated cluster

type Action = { kind: 'migrate'; vm: number; to: number | null } | { kind: 'start'; vm: number; on: number | null };

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ kind: fc.constant('migrate' as const), vm: fc.nat(5), to: fc.option(fc.nat(7), { freq: 3 }) }),
  fc.record({ kind: fc.constant('start' as const), vm: fc.nat(5), on: fc.option(fc.nat(7), { freq: 2 }) }),
);

const scenarioArb = nodesArb.chain((nodes) => {
  const active = nodes.filter((n) => n.availability === 'ACTIVE').map((n) => n.id);
  const vmArb = fc.record({ constraints: constraintsArb, nodeId: active.length ? fc.option(fc.constantFrom(...active), { freq: 3 }) : fc.constant(null) });
  return fc.record({
    nodes: fc.constant(nodes),
    vms: fc.array(vmArb, { minLength: 1, maxLength: 6 }),
    actions: fc.array(actionArb, { minLength: 1, maxLength: 6 }),
  });
});

const LATENCY_MS = 10;

async function settle<T>(clock: VirtualClock, promise: Promise<T>): Promise<{ ok: true } | { ok: false; error: unknown }> {
  const outcome = promise.then(
    () => ({ ok: true as const }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  await clock.advance(LATENCY_MS * 10);
  return outcome;
}

describe('placement on the simulated cluster (migrate, start) lands only where the model allows', () => {
  it("on the model's choice, or is refused when nothing fits", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ nodes, vms, actions }) => {
        const clock = new VirtualClock();
        const cluster = createSimulatedCluster({
          clock,
          latenciesMs: { migrate: LATENCY_MS, start: LATENCY_MS, stop: LATENCY_MS },
          topology: {
            nodes: nodes.map((n): NodeSpec => ({ id: n.id, roles: ['worker'], availability: n.availability, cordoned: n.cordoned, labels: n.labels })),
            vms: vms.map((v, i): VmSpec => ({
              name: `vm-${i}`,
              nodeId: v.nodeId,
              ...(v.nodeId === null && { runStrategy: 'Halted' }),
              nodeSelector: v.constraints.nodeSelector,
              requiredNodeAffinity: v.constraints.requiredNodeAffinity,
            })),
          },
        });
        try {
          for (const action of actions) {
            const current = await cluster.listNodes();
            const all = await cluster.listVms();
            const model = current.map(toModelNode);
            const load = (id: string) => all.filter((v) => v.nodeId === id).length;
            const vm = all[action.vm % all.length]!;
            const constraints = { nodeSelector: vm.nodeSelector, requiredNodeAffinity: vm.requiredNodeAffinity };
            const allowed = (id: string) => model.some((n) => n.id === id && n.schedulable && modelAllows(n, constraints));
            const pick = (id: number | null) => (id === null ? undefined : current[id % current.length]!.id);

            let expected: string | null;
            let refusal: 'Conflict' | 'Unavailable' = 'Conflict';
            let outcome: { ok: true } | { ok: false; error: unknown };
            if (action.kind === 'migrate') {
              if (vm.status !== 'Running' || vm.nodeId === null || !current.some((n) => n.id === vm.nodeId && n.availability !== 'OFFLINE')) continue;
              const from = vm.nodeId;
              const to = pick(action.to);
              if (to === from) continue;
              expected = to === undefined ? modelPick(model, constraints, load, from) : allowed(to) ? to : null;
              if (to !== undefined && current.find((n) => n.id === to)!.availability === 'OFFLINE') refusal = 'Unavailable';
              outcome = await settle(clock, cluster.migrateVm(vm.id, { fromNodeId: from, ...(to !== undefined && { toNodeId: to }) }));
            } else {
              if (vm.status !== 'Stopped') continue;
              const on = pick(action.on);
              expected = on !== undefined && allowed(on) ? on : modelPick(model, constraints, load, null);
              outcome = await settle(clock, cluster.startVm(vm.id, { runStrategy: 'Always', ...(on !== undefined && { nodeId: on }) }));
            }

            const after = (await cluster.getVm(vm.id)) as ClusterVm;
            if (expected === null) {
              expect(outcome.ok, `${action.kind} ${vm.id}: nothing fits, yet it succeeded`).toBe(false);
              if (!outcome.ok) expect(isBackendError(outcome.error) ? outcome.error.code : outcome.error).toBe(refusal);
              expect(after.nodeId).toBe(vm.nodeId);
            } else {
              expect(outcome, `${action.kind} ${vm.id} to ${expected}`).toEqual({ ok: true });
              expect(after.nodeId).toBe(expected);
              expect(allowed(after.nodeId!)).toBe(true);
            }
          }
        } finally {
          await cluster.close();
        }
      }),
      { seed: 20260112, numRuns: 150 },
    );
  });
});
