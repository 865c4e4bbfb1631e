import type { ClusterEvent, ClusterEventListener } from '../../src/cluster/types.ts';
import { copyEvent } from './copy.ts';

/**
 * Delivers events after the change that caused them, never inside the caller's stack
 * (a real backend's watch stream is asynchronous too), and in the order they happened:
 * queueMicrotask is FIFO.
 */
export class EventHub {
  private readonly listeners = new Set<ClusterEventListener>();

  constructor(
    private readonly onListenerError: (error: unknown) => void = () => {},
    /** Called with every change, before its delivery is queued (the state file saves here). */
    private readonly onChange?: () => void,
  ) {}

  watch(listener: ClusterEventListener): () => void {
    // Wrapped so the same function may subscribe twice and unsubscribe each independently.
    const entry: ClusterEventListener = (e) => listener(e);
    this.listeners.add(entry);
    return () => {
      this.listeners.delete(entry);
    };
  }

  emit(event: ClusterEvent): void {
    this.onChange?.();
    // Copied now: later changes to the state must not show through a queued event.
    const snapshot = copyEvent(event);
    queueMicrotask(() => {
      for (const listener of this.listeners) {
        try {
          // Each listener gets its own copy, so one listener cannot alter what the next sees.
          listener(copyEvent(snapshot));
        } catch (error) {
          this.onListenerError(error);
        }
      }
    });
  }

  clear(): void {
    this.listeners.clear();
  }
}
