import { describe, expect, it } from 'vitest';
import { podEvictionsFromEvents } from '../../../src/domain/rehearsal/pod-evictions.ts';

const ev = (type: string, pod: string, at: number, operationId = 'op-1', nodeId = 'n1') => ({ type, nodeId, operationId, at, payload: { pod } });

describe("podEvictionsFromEvents: the pod drain's evictions as POD_EVICT history (issue 33)", () => {
  it('from POD_EVICTED to POD_GONE of the same pod in the same operation, on the node the events name', () => {
    expect(
      podEvictionsFromEvents([
        ev('POD_EVICTED', 'prod/a', 1_000),
        ev('POD_EVICTED', 'prod/b', 1_000),
        ev('POD_GONE', 'prod/b', 4_000),
        ev('POD_GONE', 'prod/a', 31_000),
      ]),
    ).toEqual([
      { action: 'POD_EVICT', workloadId: 'prod/b', nodeId: 'n1', durationMs: 3_000, at: 4_000 },
      { action: 'POD_EVICT', workloadId: 'prod/a', nodeId: 'n1', durationMs: 30_000, at: 31_000 },
    ]);
  });

  it('an eviction never seen gone, a gone without its eviction, or one of another operation gives nothing', () => {
    expect(
      podEvictionsFromEvents([
        ev('POD_EVICTED', 'prod/a', 1_000),
        ev('POD_GONE', 'prod/b', 2_000),
        ev('POD_EVICTED', 'prod/c', 1_000, 'op-1'),
        ev('POD_GONE', 'prod/c', 5_000, 'op-2'),
        { type: 'POD_GONE', nodeId: 'n1', operationId: 'op-1', at: 6_000, payload: null },
      ]),
    ).toEqual([]);
  });

  it('the same pod evicted again later (a StatefulSet keeps its name) counts each eviction from its own start', () => {
    expect(
      podEvictionsFromEvents([
        ev('POD_GONE', 'prod/kv-0', 70_000, 'op-1', 'n3'),
        ev('POD_EVICTED', 'prod/kv-0', 60_000, 'op-1', 'n3'),
        ev('POD_EVICTED', 'prod/kv-0', 1_000, 'op-1', 'n1'),
        ev('POD_GONE', 'prod/kv-0', 21_000, 'op-1', 'n1'),
      ]).map((r) => [r.nodeId, r.durationMs]),
    ).toEqual([
      ['n1', 20_000],
      ['n3', 10_000],
    ]);
  });
});
