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
  private readonly listeners = new Set<(event: E) => unknown>();
  private readonly copy: (event: E) => E;
  private readonly onListenerError: (error: unknown) => void;

  constructor(options: EventFanoutOptions<E>) {
    this.copy = options.copy ?? structuredClone;
    this.onListenerError = options.onListenerError;
  }

  /** Subscribes; the returned function unsubscribes. The same function may subscribe twice, each independently. */
  add(listener: (event: E) => unknown): () => void {
    const entry = (event: E) => listener(event);
    this.listeners.add(entry);
    return () => {
      this.listeners.delete(entry);
    };
  }

  emit(event: E): void {
    void this.deliver(event);
  }

  /**
   * `emit`, and resolves once every listener that returned a promise for the event has
   * settled it, with how many did (0: no listener said it acted on it). A rejection goes to
   * `onListenerError` as a throw does.
   */
  deliver(event: E): Promise<number> {
    const snapshot = this.copy(event);
    return new Promise((resolve) => {
      queueMicrotask(() => {
        const acting: Promise<void>[] = [];
        for (const listener of [...this.listeners]) {
          if (!this.listeners.has(listener)) continue;
          try {
            const result = listener(this.copy(snapshot));
            if (result instanceof Promise) acting.push(result.catch((error: unknown) => this.onListenerError(error)));
          } catch (error) {
            this.onListenerError(error);
          }
        }
        void Promise.all(acting).then(() => resolve(acting.length));
      });
    });
  }

  /** Delivers to one listener only (a backend telling a new listener what the others already heard); as `deliver`. */
  async deliverTo(listener: (event: E) => unknown, event: E): Promise<boolean> {
    await Promise.resolve();
    try {
      const result = listener(this.copy(event));
      if (!(result instanceof Promise)) return false;
      await result.catch((error: unknown) => this.onListenerError(error));
      return true;
    } catch (error) {
      this.onListenerError(error);
      return false;
    }
  }

  clear(): void {
    this.listeners.clear();
  }
}
