import { EventFanout } from '../../src/cluster/event-fanout.ts';
import type { ClusterEvent, ClusterEventListener } from '../../src/cluster/types.ts';
import { copyEvent } from './copy.ts';

/** The simulated cluster's events: the shared fan-out, plus a hook that sees every change first. */
export class EventHub {
  private readonly fanout: EventFanout<ClusterEvent>;

  constructor(
    onListenerError: (error: unknown) => void = () => {},
    /** Called with every change, before its delivery is queued (the state file saves here). */
    private readonly onChange?: () => void,
  ) {
    this.fanout = new EventFanout({ onListenerError, copy: copyEvent });
  }

  watch(listener: ClusterEventListener): () => void {
    return this.fanout.add(listener);
  }

  emit(event: ClusterEvent): void {
    this.onChange?.();
    this.fanout.emit(event);
  }

  clear(): void {
    this.fanout.clear();
  }
}
