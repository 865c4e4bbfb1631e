import { describe, expect, it } from 'vitest';
import type { ClusterNode } from '../../src/cluster/types.ts';
import { createEventBus } from '../../src/events/bus.ts';

describe('event bus', () => {
  it('a thousand subscribers of one topic raise no MaxListenersExceededWarning, and each hears a publish', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const bus = createEventBus();
      const streams = [...Array(1000)].map(() => bus.subscribeWhere('nodeChanged', () => true)[Symbol.asyncIterator]());
      // A Repeater listens from its first next(): these are the thousand listeners.
      const firsts = streams.map((s) => s.next());
      expect(bus.subscribers('nodeChanged')).toBe(1000);
      const node = { id: 'n1' } as ClusterNode;
      bus.publish('nodeChanged', node);
      expect((await Promise.all(firsts)).every((r) => r.value === node)).toBe(true);
      await Promise.all(streams.map((s) => s.return?.()));
      expect(bus.subscribers('nodeChanged')).toBe(0);
      // process 'warning' is emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('every publish, even of the same payload object, is a new publication; an object never published has none', () => {
    const bus = createEventBus();
    const node = { id: 'n1' } as ClusterNode;
    expect(bus.publication(node)).toBeUndefined();
    bus.publish('nodeChanged', node);
    const first = bus.publication(node);
    expect(first).toBeDefined();
    expect(bus.publication(node)).toBe(first);
    bus.publish('nodeChanged', node);
    expect(bus.publication(node)).not.toBe(first);
    const progress = { operation: {}, steps: [] } as never;
    bus.publish('operationProgress', 'op-1', progress);
    expect(bus.publication(progress)).toBeDefined();
  });
});
