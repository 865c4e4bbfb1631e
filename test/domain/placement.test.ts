import { describe, expect, it } from 'vitest';
import { compareNodeIds } from '../../src/domain/compare.ts';
import { matchesLabels } from '../../src/domain/labels.ts';
import {
  matchesPlacement,
  matchesRequirement,
  pickNode,
  type NodeSelectorOperator,
  type NodeSelectorRequirement,
  type PlacementConstraints,
} from '../../src/domain/placement.ts';

const req = (key: string, operator: NodeSelectorOperator, values: string[] = []): NodeSelectorRequirement => ({ key, operator, values });
const none: PlacementConstraints = { nodeSelector: {}, requiredNodeAffinity: [] };
const affinity = (...terms: NodeSelectorRequirement[][]): PlacementConstraints => ({
  nodeSelector: {},
  requiredNodeAffinity: terms.map((matchExpressions) => ({ matchExpressions })),
});

describe('node selector and required affinity', () => {
  const labels = { zone: 'a', gpu: 'yes' };

  it('empty constraints match any node', () => {
    expect(matchesPlacement({}, none)).toBe(true);
  });

  it('node selector needs every pair, on the node itself', () => {
    expect(matchesPlacement(labels, { nodeSelector: { zone: 'a' }, requiredNodeAffinity: [] })).toBe(true);
    expect(matchesPlacement(labels, { nodeSelector: { zone: 'a', gpu: 'no' }, requiredNodeAffinity: [] })).toBe(false);
    expect(matchesPlacement({}, { nodeSelector: { constructor: 'x' }, requiredNodeAffinity: [] })).toBe(false);
  });

  it.each([
    [req('zone', 'In', ['a', 'b']), true],
    [req('zone', 'In', ['b']), false],
    [req('disk', 'In', ['ssd']), false],
    [req('zone', 'NotIn', ['b']), true],
    [req('zone', 'NotIn', ['a']), false],
    // Kubernetes: NotIn and DoesNotExist hold on a node without the key.
    [req('rack', 'NotIn', ['1']), true],
    [req('gpu', 'Exists'), true],
    [req('rack', 'Exists'), false],
    [req('rack', 'DoesNotExist'), true],
    [req('gpu', 'DoesNotExist'), false],
    [req('toString', 'Exists'), false],
  ])('%j → %s', (r, expected) => {
    expect(matchesRequirement(labels, r)).toBe(expected);
    expect(matchesPlacement(labels, affinity([r]))).toBe(expected);
  });

  it('an operator it does not model (Gt, Lt) matches nothing', () => {
    expect(matchesRequirement(labels, { key: 'zone', operator: 'Gt' as NodeSelectorOperator, values: ['1'] })).toBe(false);
    expect(matchesRequirement({}, { key: 'zone', operator: 'Lt' as NodeSelectorOperator, values: ['1'] })).toBe(false);
  });

  it('ANDs expressions inside a term, ORs terms, and ANDs the node selector with them', () => {
    expect(matchesPlacement(labels, affinity([req('zone', 'In', ['a']), req('rack', 'Exists')]))).toBe(false);
    expect(matchesPlacement(labels, affinity([req('rack', 'Exists')], [req('gpu', 'In', ['yes'])]))).toBe(true);
    const either = affinity([req('zone', 'In', ['a']), req('disk', 'In', ['ssd'])], [req('gpu', 'Exists')]);
    expect(matchesPlacement({ zone: 'a', disk: 'ssd' }, either)).toBe(true);
    expect(matchesPlacement({ zone: 'a', disk: 'hdd' }, either)).toBe(false);
    expect(matchesPlacement({ gpu: 'x' }, either)).toBe(true);
    expect(matchesPlacement({ gpu: 'x' }, { ...either, nodeSelector: { tier: 'gold' } })).toBe(false);
    expect(matchesPlacement({ gpu: 'x', tier: 'gold' }, { ...either, nodeSelector: { tier: 'gold' } })).toBe(true);
  });

  it('a term without expressions matches no node (Kubernetes NodeSelectorTerm), another term still may', () => {
    expect(matchesPlacement(labels, affinity([]))).toBe(false);
    expect(matchesPlacement({}, affinity([]))).toBe(false);
    expect(matchesPlacement(labels, affinity([], [req('gpu', 'Exists')]))).toBe(true);
  });
});

describe('pickNode', () => {
  const n = (id: string, labels: Record<string, string> = {}, schedulable = true) => ({ id, labels, schedulable });
  const choice = (load: Record<string, number> = {}, exclude: string | null = null) => ({
    schedulable: (node: { schedulable: boolean }) => node.schedulable,
    load: (id: string) => load[id] ?? 0,
    exclude,
  });

  it('least loaded first, then the lowest id in node order', () => {
    const nodes = [n('node-10'), n('node-9'), n('node-2')];
    expect(pickNode(none, nodes, choice())?.id).toBe('node-2');
    expect(pickNode(none, nodes, choice({ 'node-2': 1 }))?.id).toBe('node-9');
    expect(pickNode(none, nodes, choice({ 'node-2': 1, 'node-9': 1 }))?.id).toBe('node-10');
  });

  it('skips the excluded, unschedulable and non-matching nodes; null when none is left', () => {
    const nodes = [n('1'), n('2', {}, false), n('3', { zone: 'b' }), n('4', { zone: 'a' })];
    expect(pickNode({ nodeSelector: { zone: 'a' }, requiredNodeAffinity: [] }, nodes, choice())?.id).toBe('4');
    expect(pickNode(none, nodes, choice({}, '1'))?.id).toBe('3');
    expect(pickNode(none, nodes.slice(0, 2), choice({}, '1'))).toBeNull();
  });
});

describe('compareNodeIds', () => {
  it('orders numbers inside ids by value, for Kubernetes names and Neon ids alike', () => {
    expect(['node-10', 'node-9', 'node-1'].sort(compareNodeIds)).toEqual(['node-1', 'node-9', 'node-10']);
    expect(['10', '9', '100', '2'].sort(compareNodeIds)).toEqual(['2', '9', '10', '100']);
  });
});

describe('matchesLabels (equality label selectors: nodeSelector, `-l k=v`, listVms filters)', () => {
  it('needs every pair on the object itself; an empty selector matches all', () => {
    expect(matchesLabels({ a: '1', b: '2' }, { a: '1' })).toBe(true);
    expect(matchesLabels({ a: '1' }, { a: '1', b: '2' })).toBe(false);
    expect(matchesLabels({ a: '1' }, { a: '2' })).toBe(false);
    expect(matchesLabels({}, {})).toBe(true);
    expect(matchesLabels({}, { constructor: 'Object' })).toBe(false);
  });
});
