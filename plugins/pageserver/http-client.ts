import type { Clock } from '../../src/cluster/clock.ts';
import { BackendError, type BackendErrorCode } from '../../src/cluster/errors.ts';
import { exponentialBackoff, retry } from '../../src/cluster/retry.ts';

/**
 * A pageserver answered something Lockkeeper cannot read (not JSON, or JSON of the wrong
 * shape). Names the pageserver and the endpoint, e.g. `GET /v1/utilization`.
 */
export class PageserverResponseError extends BackendError {
  constructor(
    readonly nodeId: string,
    readonly endpoint: string,
    detail: string,
  ) {
    super('Transient', `pageserver ${nodeId}: malformed response from ${endpoint}: ${detail}`, { kind: 'node', id: nodeId });
  }
}

/** A request that failed: an HTTP error status, a timeout or a connection error. */
export class PageserverRequestError extends BackendError {
  constructor(
    code: BackendErrorCode,
    readonly nodeId: string,
    readonly endpoint: string,
    /** The HTTP status, or null for a timeout / connection error. */
    readonly status: number | null,
    readonly detail: string,
  ) {
    super(code, `pageserver ${nodeId}: ${endpoint} ${status === null ? 'failed' : `answered ${status}`}: ${detail}`, { kind: 'node', id: nodeId });
  }

  /** How many attempts were made before giving up (set by `PageserverHttp.request`). */
  attempts = 1;

  /**
   * The pageserver answered with an error status: it refused the request and changed
   * nothing. A timeout or connection error leaves it unknown whether the request was applied.
   */
  get answered(): boolean {
    return this.status !== null;
  }

  /** 5xx, timeouts and connection errors may succeed when tried again. */
  get retryableRequest(): boolean {
    return this.status === null || this.status >= 500;
  }
}

export interface HttpTarget {
  nodeId: string;
  url: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Statuses that count as success (default: 2xx). */
  okStatuses?: readonly number[];
  /** Checks the parsed body; returns an error text when it has the wrong shape. */
  check?: (json: unknown) => string | null;
  /** Retries (5xx, timeouts, connection errors); 1 = no retry. */
  attempts?: number;
  timeoutMs?: number;
}

export interface HttpResult<T> {
  status: number;
  json: T;
  /** How many attempts it took (1 = first try). */
  attempts: number;
  /** Why each earlier attempt failed, e.g. `answered 503`, `timed out after 300 ms`. */
  failures: string[];
}

export interface PageserverHttpConfig {
  clock: Clock;
  authToken?: string;
  requestTimeoutMs: number;
  attempts: number;
  backoffMs: number;
}

/**
 * Talks to pageservers with Node's fetch. Timeouts and backoff run on the injected clock;
 * `abortNode` cancels every request in flight to one pageserver (it restarted).
 */
export class PageserverHttp {
  private readonly inFlight = new Map<string, Set<AbortController>>();

  constructor(private readonly config: PageserverHttpConfig) {}

  abortNode(nodeId: string): void {
    for (const c of this.inFlight.get(nodeId) ?? []) c.abort(new Error('aborted: the pageserver re-attached'));
  }

  abortAll(): void {
    for (const nodeId of this.inFlight.keys()) this.abortNode(nodeId);
  }

  /** Aborts everything in flight; later requests fail at once. */
  close(): void {
    this.closed = true;
    this.abortAll();
  }

  private closed = false;

  async request<T>(target: HttpTarget, method: string, path: string, options: RequestOptions = {}): Promise<HttpResult<T>> {
    const attempts = options.attempts ?? this.config.attempts;
    const endpoint = `${method} ${path.split('?')[0]}`;
    const failures: string[] = [];
    // Refusing because the backend closed ends the retries, although it reads like a connection error.
    let closedRefusal: PageserverRequestError | null = null;
    return retry(
      async (attempt) => {
        if (this.closed) throw (closedRefusal = new PageserverRequestError('Unavailable', target.nodeId, endpoint, null, 'the pageserver backend is closed'));
        try {
          const result = await this.once<T>(target, method, path, endpoint, options);
          return { ...result, attempts: attempt, failures };
        } catch (e) {
          if (e instanceof PageserverRequestError) e.attempts = attempt;
          throw e;
        }
      },
      {
        clock: this.config.clock,
        maxAttempts: attempts,
        delayMs: exponentialBackoff(this.config.backoffMs),
        retryable: (e) => e !== closedRefusal && e instanceof PageserverRequestError && e.retryableRequest,
        onRetry: (e) => {
          const failed = e as PageserverRequestError;
          failures.push(failed.status === null ? failed.detail : `answered ${failed.status}`);
        },
      },
    );
  }

  private async once<T>(target: HttpTarget, method: string, path: string, endpoint: string, options: RequestOptions): Promise<{ status: number; json: T }> {
    const controller = new AbortController();
    const set = this.inFlight.get(target.nodeId) ?? new Set();
    this.inFlight.set(target.nodeId, set);
    set.add(controller);
    const timeoutMs = options.timeoutMs ?? this.config.requestTimeoutMs;
    let timedOut = false;
    const cancelTimer = this.config.clock.setTimer(timeoutMs, () => {
      timedOut = true;
      controller.abort(new Error(`timed out after ${timeoutMs} ms`));
    });
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (this.config.authToken) headers.authorization = `Bearer ${this.config.authToken}`;
    try {
      let res: Response;
      let text: string;
      try {
        res = await fetch(new URL(path, target.url), {
          method,
          headers,
          body: options.body === undefined ? undefined : JSON.stringify(options.body),
          signal: controller.signal,
        });
        text = await res.text();
      } catch (e) {
        const why = timedOut
          ? `timed out after ${timeoutMs} ms`
          : controller.signal.aborted
            ? String((controller.signal.reason as Error)?.message ?? 'aborted')
            : (e as Error).message;
        throw new PageserverRequestError('Unavailable', target.nodeId, endpoint, null, why);
      }
      const ok = options.okStatuses ? options.okStatuses.includes(res.status) : res.status >= 200 && res.status < 300;
      if (!ok) {
        let msg = text.slice(0, 300);
        try {
          const body = JSON.parse(text) as { msg?: unknown };
          if (typeof body?.msg === 'string') msg = body.msg;
        } catch {
          // not Neon's JSON error body: keep the text
        }
        throw new PageserverRequestError(codeOfStatus(res.status), target.nodeId, endpoint, res.status, msg);
      }
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch (e) {
        throw new PageserverResponseError(target.nodeId, endpoint, `not JSON (${(e as Error).message})`);
      }
      const problem = options.check?.(json) ?? null;
      if (problem) throw new PageserverResponseError(target.nodeId, endpoint, problem);
      return { status: res.status, json: json as T };
    } finally {
      cancelTimer();
      set.delete(controller);
    }
  }
}

function codeOfStatus(status: number): BackendErrorCode {
  if (status === 404) return 'NotFound';
  if (status === 409 || status === 412 || status === 400) return 'Conflict';
  if (status === 401 || status === 403) return 'Rejected';
  if (status === 503) return 'Unavailable';
  return 'Transient';
}

/** Shape checks for the responses Lockkeeper reads. */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
