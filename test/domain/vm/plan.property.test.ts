import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planMaintenance } from '../../../src/domain/vm/plan.ts';
import { MAINTENANCE_STRATEGIES } from '../../../src/domain/vm/strategy.ts';
import type { MaintNode, MaintVm } from '../../../src/domain/vm/types.ts';
import { MAINTENANCE_PHASES } from '../../../src/domain/vm/types.ts';
import { deepFreeze } from './fixtures.ts';

const zone = fc.constantFrom('a', 'b');

const nodeArb = (id: string): fc.Arbitrary<MaintNode> =>
  fc.record({
    id: fc.constant(id),
    name: fc.constant(`node-${id}`),
    ready: fc.boolean(),
    cordoned: fc.boolean(),
    roles: fc.constant(['worker']),
    labels: fc.option(zone, { nil: undefined }).map((z): Record<string, string> => (z ? { zone: z } : {})),
    maintenancePhase: fc.option(fc.constantFrom(...MAINTENANCE_PHASES), { nil: null, freq: 4 }),
  });

const clusterArb = fc.integer({ min: 1, max: 6 }).chain((count) => {
  const ids = Array.from({ length: count }, (_, i) => String(i + 1));
  const nodes = fc.tuple(...ids.map(nodeArb));
  const vmArb = (i: number): fc.Arbitrary<MaintVm> =>
    fc.record({
      id: fc.constant(`ns${i % 3}/vm-${i}`),
      namespace: fc.constant(`ns${i % 3}`),
      name: fc.constant(`vm-${i}`),
      nodeId: fc.option(fc.constantFrom(...ids), { nil: null, freq: 5 }),
      runStrategy: fc.constantFrom('Always', 'RerunOnFailure', 'Manual', 'Halted' as const),
      status: fc.constantFrom('Running', 'Running', 'Stopped', 'Migrating', 'Starting' as const),
      maintenanceStrategyLabel: fc.option(fc.constantFrom(...MAINTENANCE_STRATEGIES, 'migrate', 'bogus'), { nil: null }),
      volumes: fc.array(
        fc.record({ name: fc.constant('d'), replicas: fc.array(fc.record({ nodeId: fc.constantFrom(...ids), healthy: fc.boolean() }), { maxLength: 3 }) }),
        { maxLength: 2 },
      ),
      liveMigratable: fc.boolean(),
      liveMigratableReason: fc.constant('HostDeviceNotLiveMigratable'),
      nodeSelector: fc.option(zone, { nil: undefined }).map((z): Record<string, string> => (z ? { zone: z } : {})),
      requiredNodeAffinity: fc.constant([]),
      tracking: fc.option(
        fc.record({
          nodeName: fc.constantFrom(...ids.map((id) => `node-${id}`)),
          strategy: fc.constantFrom(...MAINTENANCE_STRATEGIES),
          savedRunStrategy: fc.constant(null),
        }),
        {
          nil: null,
        },
      ),
    }) as fc.Arbitrary<MaintVm>;
  const vms = fc.integer({ min: 0, max: 12 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => vmArb(i))));
  return fc.record({ nodes, vms, nodeId: fc.constantFrom(...ids, 'missing'), force: fc.boolean() });
});

const run = (check: (c: { nodes: MaintNode[]; vms: MaintVm[]; nodeId: string; force: boolean }) => void) =>
  fc.assert(
    fc.property(clusterArb, (c) => {
      check(deepFreeze({ nodes: [...c.nodes], vms: [...c.vms], nodeId: c.nodeId, force: c.force }));
    }),
    { seed: 20240605, numRuns: 400 },
  );

const canTake = (n: MaintNode, v: MaintVm) =>
  n.ready && !n.cordoned && n.maintenancePhase === null && Object.entries(v.nodeSelector).every(([k, val]) => n.labels[k] === val);

describe('plan properties on random clusters', () => {
  it('never targets the node itself, an unusable node, or one failing the VM’s selector', () => {
    run((c) => {
      const plan = planMaintenance(c);
      for (const e of plan.vms) {
        const target =
          e.action.kind === 'MIGRATE' ? e.action.targetNodeId : e.action.kind === 'STOP' && e.action.restart === 'AFTER_ENABLE' ? e.action.restartNodeId : null;
        if (target === null) continue;
        expect(target).not.toBe(c.nodeId);
        const v = c.vms.find((x) => x.id === e.vmId)!;
        expect(
          canTake(
            c.nodes.find((n) => n.id === target)!,
            v,
          ),
        ).toBe(true);
      }
    });
  });

  it('lists every VM on the node exactly once, and nothing that is neither on it nor tracked to it', () => {
    run((c) => {
      const plan = planMaintenance(c);
      const ids = plan.vms.map((e) => e.vmId);
      expect(new Set(ids).size).toBe(ids.length);
      if (!c.nodes.some((n) => n.id === c.nodeId)) {
        expect(ids).toEqual([]);
        return;
      }
      for (const v of c.vms) {
        const trackedHere = v.nodeId === null && v.tracking?.nodeName === `node-${c.nodeId}`;
        expect(ids.includes(v.id)).toBe(v.nodeId === c.nodeId || trackedHere);
      }
    });
  });

  it('without force, every non-migratable Migrate VM is named in a NON_MIGRATABLE_VMS refusal', () => {
    run((c) => {
      if (c.force || !c.nodes.some((n) => n.id === c.nodeId)) return;
      const plan = planMaintenance(c);
      const refusal = plan.refusals.find((r) => r.code === 'NON_MIGRATABLE_VMS');
      const named = new Set(refusal && refusal.code === 'NON_MIGRATABLE_VMS' ? Object.values(refusal.byReason).flat() : []);
      for (const v of c.vms) {
        const running = v.nodeId === c.nodeId && v.runStrategy !== 'Halted' && v.status !== 'Stopped';
        const isMigrate =
          v.maintenanceStrategyLabel === null ||
          v.maintenanceStrategyLabel === 'Migrate' ||
          !(MAINTENANCE_STRATEGIES as readonly string[]).includes(v.maintenanceStrategyLabel);
        const lastReplica = v.volumes.some((vol) => {
          const healthy = vol.replicas.filter((r) => r.healthy);
          return healthy.length === 1 && healthy[0]!.nodeId === c.nodeId;
        });
        const noHost = !c.nodes.some((n) => n.id !== c.nodeId && canTake(n, v));
        const stuck = !v.liveMigratable || lastReplica || noHost;
        expect(named.has(v.id)).toBe(running && isMigrate && stuck);
      }
    });
  });

  it('with force, no labelled VM migrates and nothing is tracked for labelled VMs', () => {
    run((c) => {
      if (!c.force) return;
      const plan = planMaintenance(c);
      expect(plan.refusals.some((r) => r.code === 'NON_MIGRATABLE_VMS')).toBe(false);
      for (const e of plan.vms.filter((x) => x.labelled)) {
        expect(e.action.kind).not.toBe('MIGRATE');
        if (e.action.kind === 'STOP') expect(e.action).toMatchObject({ restart: 'NEVER', track: false, forced: true });
      }
    });
  });
});
