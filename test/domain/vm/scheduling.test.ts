import { describe, expect, it } from 'vitest';
import { matchesPlacement, pickTargetNode, vmLoadByNode } from '../../../src/domain/vm/scheduling.ts';
import { node, vm } from './fixtures.ts';

const req = (key: string, operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist', values: string[] = []) => ({ key, operator, values });

describe('node selector and required affinity', () => {
  const labels = { zone: 'a', gpu: 'yes' };

  it('empty constraints match any node', () => {
    expect(matchesPlacement({}, { nodeSelector: {}, requiredNodeAffinity: [] })).toBe(true);
  });

  it('node selector needs every pair', () => {
    expect(matchesPlacement(labels, { nodeSelector: { zone: 'a' }, requiredNodeAffinity: [] })).toBe(true);
    expect(matchesPlacement(labels, { nodeSelector: { zone: 'a', gpu: 'no' }, requiredNodeAffinity: [] })).toBe(false);
    expect(matchesPlacement({}, { nodeSelector: { constructor: 'x' }, requiredNodeAffinity: [] })).toBe(false);
  });

  it.each([
    [req('zone', 'In', ['a', 'b']), true],
    [req('zone', 'In', ['b']), false],
    [req('zone', 'NotIn', ['b']), true],
    [req('zone', 'NotIn', ['a']), false],
    [req('rack', 'NotIn', ['1']), true],
    [req('gpu', 'Exists'), true],
    [req('rack', 'Exists'), false],
    [req('rack', 'DoesNotExist'), true],
    [req('gpu', 'DoesNotExist'), false],
  ])('%j → %s', (r, expected) => {
    expect(matchesPlacement(labels, { nodeSelector: {}, requiredNodeAffinity: [{ matchExpressions: [r] }] })).toBe(expected);
  });

  it('expressions inside a term are ANDed, terms are ORed', () => {
    const and = [{ matchExpressions: [req('zone', 'In', ['a']), req('rack', 'Exists')] }];
    expect(matchesPlacement(labels, { nodeSelector: {}, requiredNodeAffinity: and })).toBe(false);
    const or = [{ matchExpressions: [req('rack', 'Exists')] }, { matchExpressions: [req('gpu', 'In', ['yes'])] }];
    expect(matchesPlacement(labels, { nodeSelector: {}, requiredNodeAffinity: or })).toBe(true);
  });
});

describe('pickTargetNode', () => {
  const v = vm('ns', 'a', '1');

  it('least loaded first, then lowest id in natural order', () => {
    const nodes = [node('10'), node('9'), node('2')];
    expect(pickTargetNode(v, nodes, new Map(), null)?.id).toBe('2');
    expect(pickTargetNode(v, nodes, new Map([['2', 1]]), null)?.id).toBe('9');
    expect(pickTargetNode(v, nodes, new Map([['2', 1], ['9', 1]]), null)?.id).toBe('10');
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
