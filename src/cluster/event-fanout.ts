/**
 * Hands a backend's events to its `watch` listeners, the same way in every plugin:
 * - after the change that caused them, never inside the caller's stack (a real backend's
 *   watch stream is asynchronous too), and in the order they were emitted (queueMicrotask
 *   is FIFO);
 * - as they were when emitted (copied then), and each listener gets its own copy, so that
 *   neither later changes nor another listener can alter what a listener sees;
 * - to the listeners subscribed when the delivery runs, less those that unsubscribed
 *   during it (an earlier listener may stop a later one);
 * - a listener that throws is reported to `onListenerError` and never stops the others.
 */
interface EventFanoutOptions<E> {
  onListenerError: (error: unknown) => void;
  /** A deep copy; plugins with large events pass a hand-written one (structuredClone is slow). */
  copy?: (event: E) => E;
}

export class EventFanout<E> {
  private readonly listeners = new Set<(event: E) => void>();
  private readonly copy: (event: E) => E;
  private readonly onListenerError: (error: unknown) => void;

  constructor(options: EventFanoutOptions<E>) {
    this.copy = options.copy ?? structuredClone;
    this.onListenerError = options.onListenerError;
  }

  /** Subscribes; the returned function unsubscribes. The same function may subscribe twice, each independently. */
  add(listener: (event: E) => void): () => void {
    const entry = (event: E) => listener(event);
    this.listeners.add(entry);
    return () => {
      this.listeners.delete(entry);
    };
  }

  emit(event: E): void {
    const snapshot = this.copy(event);
    queueMicrotask(() => {
      for (const listener of [...this.listeners]) {
        if (!this.listeners.has(listener)) continue;
        try {
          listener(this.copy(snapshot));
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
