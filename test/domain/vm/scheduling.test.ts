import { describe, expect, it } from 'vitest';
import { pickTargetNode, vmLoadByNode } from '../../../src/domain/vm/scheduling.ts';
import { node, vm } from './fixtures.ts';

describe('pickTargetNode', () => {
  const v = vm('ns', 'a', '1');

  it('least loaded first, then lowest id in natural order', () => {
    const nodes = [node('10'), node('9'), node('2')];
    expect(pickTargetNode(v, nodes, new Map(), null)?.id).toBe('2');
    expect(pickTargetNode(v, nodes, new Map([['2', 1]]), null)?.id).toBe('9');
    expect(
      pickTargetNode(
        v,
        nodes,
        new Map([
          ['2', 1],
          ['9', 1],
        ]),
        null,
      )?.id,
    ).toBe('10');
  });

  it('never picks a node no VM runs on (a pageserver only: role storage), however idle', () => {
    const nodes = [node('1', { hostsVms: false }), node('2')];
    expect(pickTargetNode(v, nodes, new Map([['2', 5]]), null)?.id).toBe('2');
    expect(pickTargetNode(v, [node('1', { hostsVms: false })], new Map(), null)).toBeNull();
  });

  it('skips the excluded, not-ready, cordoned, in-maintenance and non-matching nodes', () => {
    const nodes = [
      node('1'),
      node('2', { ready: false }),
      node('3', { cordoned: true }),
      node('4', { maintenancePhase: 'VALIDATING' }),
      node('5', { labels: { zone: 'b' } }),
      node('6', { labels: { zone: 'a' } }),
    ];
    expect(pickTargetNode({ ...v, nodeSelector: { zone: 'a' } }, nodes, new Map(), '1')?.id).toBe('6');
    expect(pickTargetNode(v, nodes.slice(0, 5), new Map([['5', 3]]), '1')?.id).toBe('5');
    expect(pickTargetNode(v, nodes.slice(0, 4), new Map(), '1')).toBeNull();
  });

  it('load counts every VM placed on a node', () => {
    const load = vmLoadByNode([vm('a', 'a', '1'), vm('a', 'b', '1', { status: 'Starting' }), vm('a', 'c', null), vm('a', 'd', '2')]);
    expect(Object.fromEntries(load)).toEqual({ '1': 2, '2': 1 });
  });
});
