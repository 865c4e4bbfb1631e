import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ClusterNode } from '../../../src/cluster/types.ts';
import { matchesPlacement, type PlacementConstraints } from '../../../src/domain/placement.ts';
import { canTake, isSchedulable, pickNode } from '../../../plugins/fake/scheduling.ts';

const node = (id: string, labels: Record<string, string> = {}, over: Partial<ClusterNode> = {}): ClusterNode => ({
  id,
  name: `node-${id}`,
  zone: null,
  roles: [],
  availability: 'ACTIVE',
  cordoned: false,
  labels,
  ...over,
});
const none = { nodeSelector: {}, requiredNodeAffinity: [] };

describe('pickNode', () => {
  it('prefers the least loaded node, then the lowest id compared numerically', () => {
    const nodes = [node('10'), node('9'), node('2')];
    const load: Record<string, number> = { '10': 0, '9': 0, '2': 1 };
    expect(pickNode(nodes, none, (id) => load[id]!)?.id).toBe('9');
  });

  it('skips excluded, cordoned, not ACTIVE and non-matching nodes; null when nothing fits', () => {
    const nodes = [
      node('1'),
      node('2', {}, { cordoned: true }),
      node('3', {}, { availability: 'WARMING_UP' }),
      node('4', {}, { availability: 'OFFLINE' }),
      node('5', { gpu: 'true' }),
    ];
    expect(pickNode(nodes, none, () => 0, '1')?.id).toBe('5');
    expect(pickNode(nodes, { nodeSelector: { gpu: 'true' }, requiredNodeAffinity: [] }, () => 0)?.id).toBe('5');
    expect(pickNode(nodes, { nodeSelector: { gpu: 'true' }, requiredNodeAffinity: [] }, () => 0, '5')).toBeNull();
  });

  it('a node takes a VM when it is ACTIVE, uncordoned and matches the placement', () => {
    const gpu = { nodeSelector: { gpu: 'true' }, requiredNodeAffinity: [] };
    expect(canTake(node('5', { gpu: 'true' }), gpu)).toBe(true);
    expect(canTake(node('5', {}), gpu)).toBe(false);
    expect(canTake(node('5', { gpu: 'true' }, { cordoned: true }), gpu)).toBe(false);
    expect(canTake(node('5', { gpu: 'true' }, { availability: 'WARMING_UP' }), gpu)).toBe(false);
  });

  it('always returns a schedulable, matching node of minimal load among the candidates', () => {
    const arbNode = fc.record({
      id: fc.integer({ min: 1, max: 30 }).map(String),
      gpu: fc.boolean(),
      cordoned: fc.boolean(),
      availability: fc.constantFrom('ACTIVE' as const, 'WARMING_UP' as const, 'OFFLINE' as const),
      load: fc.nat(5),
    });
    fc.assert(
      fc.property(fc.uniqueArray(arbNode, { selector: (n) => n.id, maxLength: 12 }), fc.boolean(), (specs, wantGpu) => {
        const nodes = specs.map((s) => node(s.id, s.gpu ? { gpu: 'true' } : {}, { cordoned: s.cordoned, availability: s.availability }));
        const load = (id: string) => specs.find((s) => s.id === id)!.load;
        const constraints: PlacementConstraints = { nodeSelector: wantGpu ? { gpu: 'true' } : {}, requiredNodeAffinity: [] };
        const candidates = nodes.filter((n) => isSchedulable(n) && matchesPlacement(n.labels, constraints));
        const picked = pickNode(nodes, constraints, load);
        if (candidates.length === 0) return picked === null;
        return !!picked && candidates.includes(picked) && candidates.every((c) => load(c.id) >= load(picked.id));
      }),
    );
  });
});
