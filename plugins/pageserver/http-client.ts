import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LeaseAuthority } from '../../src/cluster/authority.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import { BackendError, type BackendErrorCode } from '../../src/cluster/errors.ts';
import { SENDER_HEADER } from '../../src/cluster/plugin.ts';
import { retry } from '../../src/cluster/retry.ts';
import { neonBackoffMs } from './neon-retry.ts';

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

/** A request that failed: an HTTP error status, a timeout, a connection error, or a cancel. */
export class PageserverRequestError extends BackendError {
  constructor(
    code: BackendErrorCode,
    readonly nodeId: string,
    readonly endpoint: string,
    /** The HTTP status, or null for a timeout / connection error / cancel. */
    readonly status: number | null,
    readonly detail: string,
    /** Ended by a cancel (the node went offline, the reconcile was cancelled, the backend closed): never retried. */
    readonly cancelled = false,
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
}

/**
 * Neon's retry wrapper (`Node::with_client_retries`, neon spec "Retry wrapper"): connection
 * and body errors, per-attempt timeouts and 408 / 503 / 504 are retried; any other status
 * ends the call at once, and so does a cancel.
 */
function neonRetryable(e: unknown): boolean {
  if (e instanceof PageserverResponseError) return true;
  if (!(e instanceof PageserverRequestError) || e.cancelled) return false;
  return e.status === null || e.status === 408 || e.status === 503 || e.status === 504;
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
  /** Retries after the first attempt ("n retries" = n + 1 attempts). */
  retries: number;
  /** Per attempt. */
  timeoutMs: number;
  /** Ends the call (and its retries) when aborted. */
  signal?: AbortSignal;
}

export interface HttpResult<T> {
  status: number;
  /** The parsed body (null for an empty one). */
  json: T;
  /** How many attempts it took (1 = first try). */
  attempts: number;
  /** Why each earlier attempt failed, e.g. `answered 503`, `timed out after 300 ms`. */
  failures: string[];
}

export interface PageserverHttpConfig {
  clock: Clock;
  authToken?: string;
  /** ha:L8: whether this replica leads; a request that changes a pageserver is refused otherwise, checked as it is sent. Absent: always. */
  mayAct?: () => boolean;
  /** ha:L3, ha:L9: the authority each request is sent under (checked first, named, its signal aborts it). Absent: not named. */
  authority?: () => LeaseAuthority;
}

/**
 * Talks to pageservers with Node's fetch, through Neon's retry wrapper. Timeouts and
 * backoff run on the injected clock; `abortNode` cancels every call in flight to one
 * pageserver (it went offline or restarted, neon:C11, neon:H4).
 */
export class PageserverHttp {
  private readonly inFlight = new Map<string, Set<AbortController>>();
  /** Per node: fired (and replaced) when its calls are cancelled, so retries waiting between attempts stop too. */
  private readonly nodeCancels = new Map<string, AbortController>();
  private readonly closing = new AbortController();
  private closed = false;
  private active = 0;

  constructor(private readonly config: PageserverHttpConfig) {}

  /** Requests sent and not yet answered (tests wait for the plugin to be idle). */
  get pending(): number {
    return this.active;
  }

  abortNode(nodeId: string, why: string): void {
    this.nodeCancels.get(nodeId)?.abort(new Error(why));
    this.nodeCancels.delete(nodeId);
    for (const c of this.inFlight.get(nodeId) ?? []) c.abort(new Error(why));
  }

  /** Aborts everything in flight; later requests fail at once. */
  close(): void {
    this.closed = true;
    this.closing.abort(new Error('the pageserver backend is closed'));
    for (const nodeId of this.inFlight.keys()) this.abortNode(nodeId, 'the pageserver backend is closed');
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /** Kept-alive connections to the pageservers, this client's own (closed with it). */
  private readonly agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

  private nodeCancel(nodeId: string): AbortSignal {
    let c = this.nodeCancels.get(nodeId);
    if (!c) this.nodeCancels.set(nodeId, (c = new AbortController()));
    return c.signal;
  }

  async request<T>(target: HttpTarget, method: string, path: string, options: RequestOptions): Promise<HttpResult<T>> {
    const endpoint = `${method} ${path.split('?')[0]}`;
    const failures: string[] = [];
    // ha:L9: taken once for the call, so that its retries stay under the epoch that issued it.
    const authority = this.config.authority?.();
    const signals = [
      this.closing.signal,
      this.nodeCancel(target.nodeId),
      ...(options.signal ? [options.signal] : []),
      ...(authority ? [authority.signal] : []),
    ];
    // Read only between attempts (a retry's wait, whether to retry): built then. AbortSignal.any
    // per call cost as much CPU as the rest of the request in a 1000-shard failover (issue 29 point 2).
    let stop: AbortSignal | undefined;
    return retry(
      async (attempt) => {
        if (this.closed) throw new PageserverRequestError('Unavailable', target.nodeId, endpoint, null, 'the pageserver backend is closed', true);
        if (options.signal?.aborted) throw this.cancelled(target, endpoint, options.signal);
        try {
          const result = await this.once<T>(target, method, path, endpoint, options, authority);
          return { ...result, attempts: attempt, failures };
        } catch (e) {
          if (e instanceof PageserverRequestError) e.attempts = attempt;
          throw e;
        }
      },
      {
        clock: this.config.clock,
        maxAttempts: options.retries + 1,
        delayMs: neonBackoffMs,
        retryable: (e) => neonRetryable(e),
        get signal() {
          return (stop ??= AbortSignal.any(signals));
        },
        onRetry: (e) => {
          const failed = e as PageserverRequestError;
          failures.push(failed.status === null || failed.status === undefined ? (failed.detail ?? failed.message) : `answered ${failed.status}`);
        },
      },
    );
  }

  private cancelled(target: HttpTarget, endpoint: string, signal: AbortSignal): PageserverRequestError {
    const why = signal.reason instanceof Error ? signal.reason.message : 'cancelled';
    return new PageserverRequestError('Unavailable', target.nodeId, endpoint, null, why, true);
  }

  private async once<T>(
    target: HttpTarget,
    method: string,
    path: string,
    endpoint: string,
    options: RequestOptions,
    authority: LeaseAuthority | undefined,
  ): Promise<{ status: number; json: T }> {
    const refused = (why: string) => new PageserverRequestError('Unavailable', target.nodeId, endpoint, null, why, true);
    // ha:L9: before anything is sent, reads included: the epoch that issued it is not over and its lease deadline has not passed.
    try {
      authority?.assertValid();
    } catch (e) {
      throw refused((e as Error).message);
    }
    // ha:L8: checked here, at the last instant before each attempt is sent, not when the action began.
    if (method !== 'GET' && (!(this.config.mayAct?.() ?? true) || authority?.leads === false)) throw refused('refused: this replica is not the leader (ha:L8)');
    const controller = new AbortController();
    const set = this.inFlight.get(target.nodeId) ?? new Set();
    this.inFlight.set(target.nodeId, set);
    set.add(controller);
    const onCallerAbort = () => controller.abort(options.signal?.reason ?? new Error('cancelled'));
    options.signal?.addEventListener('abort', onCallerAbort, { once: true });
    const onStepDown = () => controller.abort(authority?.signal.reason ?? new Error('stepped down'));
    authority?.signal.addEventListener('abort', onStepDown, { once: true });
    const { timeoutMs } = options;
    let timedOut = false;
    const cancelTimer = this.config.clock.setTimer(timeoutMs, () => {
      timedOut = true;
      controller.abort(new Error(`timed out after ${timeoutMs} ms`));
    });
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (this.config.authToken) headers.authorization = `Bearer ${this.config.authToken}`;
    if (authority) headers[SENDER_HEADER] = authority.tag();
    this.active++;
    try {
      let res: { status: number };
      let text: string;
      try {
        ({ res, text } = await this.send(
          new URL(path, target.url),
          method,
          headers,
          options.body === undefined ? undefined : JSON.stringify(options.body),
          controller.signal,
        ));
      } catch (e) {
        if (timedOut) throw new PageserverRequestError('Unavailable', target.nodeId, endpoint, null, `timed out after ${timeoutMs} ms`);
        if (controller.signal.aborted) {
          const reason = controller.signal.reason as Error | undefined;
          throw new PageserverRequestError('Unavailable', target.nodeId, endpoint, null, reason?.message ?? 'cancelled', true);
        }
        throw new PageserverRequestError('Unavailable', target.nodeId, endpoint, null, (e as Error).message);
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
      let json: unknown = null;
      if (text !== '') {
        try {
          json = JSON.parse(text);
        } catch (e) {
          throw new PageserverResponseError(target.nodeId, endpoint, `not JSON (${(e as Error).message})`);
        }
      }
      const problem = options.check?.(json) ?? null;
      if (problem) throw new PageserverResponseError(target.nodeId, endpoint, problem);
      return { status: res.status, json: json as T };
    } finally {
      this.active--;
      cancelTimer();
      set.delete(controller);
      options.signal?.removeEventListener('abort', onCallerAbort);
      authority?.signal.removeEventListener('abort', onStepDown);
    }
  }

  /**
   * One exchange with node:http(s) on this client's kept-alive agents: the status and the
   * body as text. (Node's fetch cost about twice the CPU per request, its web streams and
   * per-request signals, and a 1000-shard failover's pipeline is CPU-bound: issue 29 point 2.)
   * Rejects on a connection or body error, and when `signal` aborts.
   */
  private send(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal,
  ): Promise<{ res: { status: number }; text: string }> {
    const https = url.protocol === 'https:';
    const request = https ? httpsRequest : httpRequest;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    return new Promise((resolve, reject) => {
      const req = request(url, { method, headers, signal, agent: https ? this.agents.https : this.agents.http }, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ res: { status: res.statusCode ?? 0 }, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('the connection closed before the answer ended')));
      });
      req.on('error', reject);
      req.end(body);
    });
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
