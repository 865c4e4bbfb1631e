import type { Watch } from '@kubernetes/client-node';
import type { Clock } from '../../src/cluster/clock.ts';
import { exponentialBackoff } from '../../src/cluster/retry.ts';
import { httpStatusOf } from './kube.ts';
import type { KObject } from './mapping.ts';

export interface InformerDeps {
  /** A consistent list: items and the list's resourceVersion. */
  list(): Promise<{ items: KObject[]; resourceVersion: string }>;
  /** The collection's URL path, e.g. `/api/v1/nodes`. */
  path: string;
  watch: Watch;
  clock: Clock;
  backoffMs: number;
  backoffMaxMs: number;
  timeoutSeconds: number;
  /** Called after each change of one object (null: deleted). */
  onChange(key: string, object: KObject | null): void;
  /** Called when a list or (re)connect of the watch fails (not for 410 Gone, which relists); the loop keeps retrying. */
  onError?(error: unknown): void;
  log: { warn(obj: object, msg?: string): void; info(obj: object, msg?: string): void };
}

const keyOf = (o: KObject) => (o.metadata?.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : (o.metadata?.name ?? ''));

class Expired extends Error {}

/**
 * List then watch one collection, like client-go's reflector: the watch resumes from the
 * last resourceVersion it saw (objects or BOOKMARKs) after a dropped connection or a server
 * timeout, with exponential backoff while the server is unreachable; 410 Gone (version
 * compacted away) relists and reports what changed meanwhile, deletions included.
 */
export class Informer {
  readonly objects = new Map<string, KObject>();
  /** Resolves after the first list; rejects if it fails (the loop keeps retrying). */
  readonly firstSync: Promise<void>;
  private resolveSync!: () => void;
  private rejectSync!: (e: unknown) => void;
  private synced = false;
  private stopped = false;
  private abort: AbortController | null = null;
  private wake: (() => void) | null = null;
  /** Times the watch was (re)established; for tests. */
  watchesStarted = 0;
  relists = 0;
  /** The newest resourceVersion this informer has applied (list, object or BOOKMARK); 0 before the first list. */
  seenResourceVersion = 0;

  constructor(private readonly deps: InformerDeps) {
    this.firstSync = new Promise<void>((resolve, reject) => {
      this.resolveSync = resolve;
      this.rejectSync = reject;
    });
    this.firstSync.catch(() => {});
  }

  start(): void {
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
    this.wake?.();
  }

  private async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const cancel = this.deps.clock.setTimer(ms, () => {
        this.wake = null;
        resolve();
      });
      this.wake = () => {
        cancel();
        resolve();
      };
    });
  }

  private seen(rv: string): void {
    const n = Number(rv);
    if (Number.isFinite(n) && n > this.seenResourceVersion) this.seenResourceVersion = n;
  }

  private replace(items: KObject[]): void {
    const seen = new Set<string>();
    for (const item of items) {
      const key = keyOf(item);
      seen.add(key);
      this.objects.set(key, item);
      if (this.synced) this.deps.onChange(key, item);
    }
    for (const key of [...this.objects.keys()]) {
      if (seen.has(key)) continue;
      this.objects.delete(key);
      if (this.synced) this.deps.onChange(key, null);
    }
  }

  private async run(): Promise<void> {
    let rv: string | null = null;
    // Not `retry`: this loop never gives up, relists on 410 and starts over after every good watch.
    const backoff = exponentialBackoff(this.deps.backoffMs, this.deps.backoffMaxMs);
    let failures = 0;
    while (!this.stopped) {
      try {
        if (rv === null) {
          const list = await this.deps.list();
          if (this.stopped) return;
          this.relists++;
          this.replace(list.items);
          rv = list.resourceVersion;
          this.seen(rv);
          if (!this.synced) {
            this.synced = true;
            this.resolveSync();
          }
        }
        rv = await this.watchOnce(rv);
        failures = 0;
      } catch (e) {
        if (this.stopped) return;
        if (!this.synced) this.rejectSync(e);
        if (e instanceof Expired || httpStatusOf(e) === 410) {
          this.deps.log.info({ path: this.deps.path }, `watch of ${this.deps.path}: resourceVersion expired, relisting`);
          rv = null;
          continue;
        }
        const delayMs = backoff(++failures);
        this.deps.log.warn({ path: this.deps.path, err: e }, `watch of ${this.deps.path} failed; retrying in ${delayMs} ms`);
        this.deps.onError?.(e);
        await this.sleep(delayMs);
      }
    }
  }

  /** One watch request; resolves with the last resourceVersion seen when the stream ends. */
  private watchOnce(fromRv: string): Promise<string> {
    let rv = fromRv;
    return new Promise<string>((resolve, reject) => {
      let expired = false;
      let failure: unknown = null;
      const done = (err: unknown) => {
        this.abort = null;
        if (expired) reject(new Expired());
        else if (failure) reject(failure);
        else if (err && !(err instanceof Error && err.name === 'AbortError')) reject(err);
        else resolve(rv);
      };
      const onEvent = (type: string, object: KObject) => {
        if (type === 'ERROR') {
          const code = (object as { code?: number }).code;
          if (code === 410) expired = true;
          else failure = Object.assign(new Error(`watch error: ${JSON.stringify(object)}`), { statusCode: code });
          this.abort?.abort();
          return;
        }
        const next = object?.metadata?.resourceVersion;
        if (next) rv = next;
        if (type !== 'BOOKMARK') {
          const key = keyOf(object);
          if (type === 'DELETED') this.objects.delete(key);
          else this.objects.set(key, object);
          this.deps.onChange(key, type === 'DELETED' ? null : object);
        }
        // After onChange: "seen" means applied and reported.
        if (next) this.seen(next);
      };
      this.watchesStarted++;
      this.deps.watch
        .watch(this.deps.path, { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: this.deps.timeoutSeconds }, onEvent, done)
        .then((controller) => {
          if (this.stopped) controller.abort();
          else this.abort = controller;
        })
        .catch(reject);
    });
  }
}
