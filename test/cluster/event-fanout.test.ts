import { describe, expect, it } from 'vitest';
import { flushMicrotasks } from '../support/virtual-clock.ts';
import { EventFanout } from '../../src/cluster/event-fanout.ts';

interface Ev {
  n: number;
  tags: string[];
}

function fanout() {
  const errors: unknown[] = [];
  return { errors, events: new EventFanout<Ev>({ onListenerError: (e) => errors.push(e) }) };
}

describe('EventFanout', () => {
  it('delivers after the caller returns, in emit order', async () => {
    const { events } = fanout();
    const seen: number[] = [];
    events.add((e) => seen.push(e.n));
    events.emit({ n: 1, tags: [] });
    events.emit({ n: 2, tags: [] });
    expect(seen).toEqual([]);
    await flushMicrotasks();
    expect(seen).toEqual([1, 2]);
  });

  it('delivers the event as it was when emitted, a separate copy to each listener', async () => {
    const { events } = fanout();
    const got: Ev[] = [];
    events.add((e) => {
      e.tags.push('changed by the first');
      got.push(e);
    });
    events.add((e) => got.push(e));
    const event = { n: 1, tags: ['a'] };
    events.emit(event);
    event.tags.push('changed after emit');
    await flushMicrotasks();
    expect(got[1]).toEqual({ n: 1, tags: ['a'] });
    expect(got[0]).not.toBe(got[1]);
  });

  it('uses the copy it is given, once per listener (the copy taken at emit goes to the last one)', async () => {
    const copies: number[] = [];
    const events = new EventFanout<Ev>({ onListenerError: () => {}, copy: (e) => (copies.push(e.n), { ...e, tags: [...e.tags] }) });
    events.add(() => {});
    events.emit({ n: 7, tags: [] });
    await flushMicrotasks();
    expect(copies).toEqual([7]);
    events.add(() => {});
    events.emit({ n: 8, tags: [] });
    await flushMicrotasks();
    expect(copies).toEqual([7, 8, 8]);
  });

  it('a throwing listener is reported and the others still get the event', async () => {
    const { events, errors } = fanout();
    const seen: string[] = [];
    events.add(() => seen.push('first'));
    events.add(() => {
      throw new Error('boom');
    });
    events.add(() => seen.push('third'));
    events.emit({ n: 1, tags: [] });
    events.emit({ n: 2, tags: [] });
    await flushMicrotasks();
    expect(seen).toEqual(['first', 'third', 'first', 'third']);
    expect(errors.map((e) => (e as Error).message)).toEqual(['boom', 'boom']);
  });

  it('the same function may subscribe twice, and each subscription ends on its own', async () => {
    const { events } = fanout();
    const seen: number[] = [];
    const listener = (e: Ev) => seen.push(e.n);
    const stopFirst = events.add(listener);
    events.add(listener);
    events.emit({ n: 1, tags: [] });
    await flushMicrotasks();
    stopFirst();
    stopFirst();
    events.emit({ n: 2, tags: [] });
    await flushMicrotasks();
    expect(seen).toEqual([1, 1, 2]);
  });

  it('a listener stopped during a delivery misses it; one added during it waits for the next event', async () => {
    const { events } = fanout();
    const seen: string[] = [];
    let stopSecond = () => {};
    events.add((e) => {
      seen.push(`first ${e.n}`);
      if (e.n === 1) {
        stopSecond();
        events.add((l) => seen.push(`late ${l.n}`));
      }
    });
    stopSecond = events.add((e) => seen.push(`second ${e.n}`));
    events.emit({ n: 1, tags: [] });
    await flushMicrotasks();
    events.emit({ n: 2, tags: [] });
    await flushMicrotasks();
    expect(seen).toEqual(['first 1', 'first 2', 'late 2']);
  });

  it('clear drops every listener, also for deliveries already queued', async () => {
    const { events } = fanout();
    const seen: number[] = [];
    events.add((e) => seen.push(e.n));
    events.emit({ n: 1, tags: [] });
    events.clear();
    events.emit({ n: 2, tags: [] });
    await flushMicrotasks();
    expect(seen).toEqual([]);
  });
});
