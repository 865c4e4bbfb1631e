/**
 * Hands a backend's events to its `watch` listeners, the same way in every plugin:
 * - after the change that caused them, never inside the caller's stack (a real backend's
 *   watch stream is asynchronous too), and in the order they were emitted (a microtask
 *   each, FIFO);
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

const RESOLVED = Promise.resolve();

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
    const snapshot = this.copy(event);
    // A resolved promise's reaction rather than queueMicrotask, which makes an AsyncResource per call (a shard move emits one event).
    void RESOLVED.then(() => {
      this.toListeners(snapshot, null);
    });
  }

  /**
   * `emit`, and resolves once every listener that returned a promise for the event has
   * settled it, with how many did (0: no listener said it acted on it). A rejection goes to
   * `onListenerError` as a throw does.
   */
  deliver(event: E): Promise<number> {
    const snapshot = this.copy(event);
    return RESOLVED.then(() => {
      const acting: Promise<void>[] = [];
      this.toListeners(snapshot, acting);
      return Promise.all(acting).then(() => acting.length);
    });
  }

  /** Hands `snapshot` to each listener subscribed now (its own copy; the last one gets the snapshot itself, which nobody else sees). */
  private toListeners(snapshot: E, acting: Promise<void>[] | null): void {
    const listeners = [...this.listeners];
    for (let i = 0; i < listeners.length; i++) {
      const listener = listeners[i]!;
      if (!this.listeners.has(listener)) continue;
      try {
        const result = listener(i === listeners.length - 1 ? snapshot : this.copy(snapshot));
        if (result instanceof Promise) {
          const settled = result.catch((error: unknown) => this.onListenerError(error));
          acting?.push(settled);
        }
      } catch (error) {
        this.onListenerError(error);
      }
    }
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
