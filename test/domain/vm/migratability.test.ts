import { describe, expect, it } from 'vitest';
import { nonMigratableReasons } from '../../../src/domain/vm/migratability.ts';
import { lastReplicaOn, node, vm } from './fixtures.ts';

const nodes = [node('1'), node('2', { labels: { zone: 'b' } })];

describe('non-migratable detection vm:N1–N3', () => {
  it('a plain VM is migratable', () => {
    expect(nonMigratableReasons(vm('a', 'a', '1'), '1', nodes)).toEqual([]);
  });

  it('vm:N1: the only healthy replica of a volume is on this node', () => {
    const v = vm('a', 'a', '1', { volumes: [lastReplicaOn('1', 'root')] });
    expect(nonMigratableReasons(v, '1', nodes)).toEqual([{ code: 'LastHealthyReplica', volume: 'root' }]);
  });

  it('vm:N1: not when another healthy replica exists, or the single one is elsewhere', () => {
    const two = {
      name: 'd',
      replicas: [
        { nodeId: '1', healthy: true },
        { nodeId: '2', healthy: true },
      ],
    };
    expect(nonMigratableReasons(vm('a', 'a', '1', { volumes: [two] }), '1', nodes)).toEqual([]);
    expect(nonMigratableReasons(vm('a', 'a', '1', { volumes: [lastReplicaOn('2')] }), '1', nodes)).toEqual([]);
  });

  it('vm:N2: the backend verdict, with its reason', () => {
    const v = vm('a', 'a', '1', { liveMigratable: false, liveMigratableReason: 'HostDeviceNotLiveMigratable' });
    expect(nonMigratableReasons(v, '1', nodes)).toEqual([{ code: 'NotLiveMigratable', backendReason: 'HostDeviceNotLiveMigratable' }]);
  });

  it('vm:N3: no other ready, uncordoned, out-of-maintenance node matches', () => {
    const v = vm('a', 'a', '1', { nodeSelector: { zone: 'b' } });
    expect(nonMigratableReasons(v, '1', nodes)).toEqual([]);
    for (const bad of [{ ready: false }, { cordoned: true }, { maintenancePhase: 'DRAINING' as const }]) {
      expect(nonMigratableReasons(v, '1', [node('1', { labels: { zone: 'b' } }), node('2', { labels: { zone: 'b' }, ...bad })])).toEqual([
        { code: 'NodeSchedulingRequirementsNotMet' },
      ]);
    }
    // The node itself matching does not help.
    expect(nonMigratableReasons(v, '1', [node('1', { labels: { zone: 'b' } }), node('2')])).toEqual([{ code: 'NodeSchedulingRequirementsNotMet' }]);
  });

  it('returns every reason that applies', () => {
    const v = vm('a', 'a', '1', {
      volumes: [lastReplicaOn('1')],
      liveMigratable: false,
      liveMigratableReason: 'DisksNotLiveMigratable',
      nodeSelector: { zone: 'z' },
    });
    expect(nonMigratableReasons(v, '1', nodes).map((r) => r.code)).toEqual(['LastHealthyReplica', 'NotLiveMigratable', 'NodeSchedulingRequirementsNotMet']);
  });
});
