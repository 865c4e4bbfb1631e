/**
 * Whether the database answers, as every part of the server sees it (issue 27, ha:DB5): a
 * failed exchange that means "the database is not there" (refused or dropped connections, a
 * server starting or shutting down, SQLite I/O failing) marks it down and becomes a typed
 * {@link DatabaseUnavailableError} naming it; a probe brings it back up. Other database
 * errors (constraints, a fence's refusal) are not outages and pass through unchanged.
 */
import { DatabaseUnavailableError } from '../domain/errors.ts';

export type DatabaseState = 'up' | 'down';

/** Driver-adapter error kinds (Prisma's DriverAdapterError) that mean the database is not reachable. */
const UNREACHABLE_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections', 'TlsConnectionError']);
/** Prisma's connection-level codes: can't reach, timed out, server closed the connection, pool timeout. */
const UNREACHABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
/** Socket errors of the `pg` driver and Node. */
const UNREACHABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** PostgreSQL SQLSTATEs: class 08 (connection exception), 57P01–57P03 (shutdown, crash, cannot connect now), 53300 (too many connections). */
const UNREACHABLE_SQLSTATE = /^(08...|57P0[123]|53300)$/;
/** SQLite result codes: I/O failing, the file gone or unopenable, the lock held past busy_timeout. */
const UNREACHABLE_SQLITE = /^SQLITE_(IOERR|CANTOPEN|BUSY|READONLY_DBMOVED)/;
/** What `pg` says about a connection that ended or never came (no code). */
const UNREACHABLE_MESSAGES = [/^Connection terminated/, /timeout exceeded when trying to connect/i, /^Client has encountered a connection error/];

type Loose = {
  code?: unknown;
  message?: unknown;
  kind?: unknown;
  originalCode?: unknown;
  originalMessage?: unknown;
  cause?: unknown;
  meta?: unknown;
  name?: unknown;
};

/** What in an error (or its causes) says the database is unreachable: the driver's words, or null when it is another kind of error. */
export function unreachableDetail(error: unknown, depth = 0): string | null {
  if (error === null || typeof error !== 'object' || depth > 5) return null;
  if (error instanceof DatabaseUnavailableError) return error.detail;
  const e = error as Loose;
  const message = typeof e.message === 'string' ? e.message : '';
  const code = typeof e.code === 'string' ? e.code : '';
  if (typeof e.kind === 'string') {
    if (UNREACHABLE_KINDS.has(e.kind)) return kindDetail(e);
    const original = typeof e.originalCode === 'string' ? e.originalCode : '';
    if ((e.kind === 'postgres' && UNREACHABLE_SQLSTATE.test(original)) || (e.kind === 'sqlite' && UNREACHABLE_SQLITE.test(original))) {
      return typeof e.originalMessage === 'string' ? e.originalMessage : message || original;
    }
  }
  const adapterCause = (e.meta as { driverAdapterError?: { cause?: unknown } } | undefined)?.driverAdapterError?.cause;
  const fromAdapter = unreachableDetail(adapterCause, depth + 1);
  if (fromAdapter) return fromAdapter;
  if (UNREACHABLE_PRISMA_CODES.has(code)) return lastLine(message);
  if (e.name === 'PrismaClientInitializationError') return lastLine(message);
  if (UNREACHABLE_SOCKET_CODES.has(code) || UNREACHABLE_SQLSTATE.test(code) || UNREACHABLE_SQLITE.test(code)) return message || code;
  if (UNREACHABLE_MESSAGES.some((m) => m.test(message))) return message;
  // graphql-js wraps a resolver's error as `originalError`.
  return unreachableDetail(e.cause, depth + 1) ?? unreachableDetail((e as { originalError?: unknown }).originalError, depth + 1);
}

function kindDetail(e: Loose & { host?: unknown; port?: unknown }): string {
  if (e.kind === 'DatabaseNotReachable' && typeof e.host === 'string') return `can't reach the server at ${e.host}${e.port ? `:${String(e.port)}` : ''}`;
  return (
    { ConnectionClosed: 'the server closed the connection', SocketTimeout: 'timed out', TooManyConnections: 'too many connections' }[String(e.kind)] ??
    String(e.kind)
  );
}

/** Prisma's messages start with the call site; its last line is the driver's. */
const lastLine = (message: string) => message.trim().split('\n').at(-1)?.trim() ?? message;

export interface DatabaseAvailabilityOptions {
  /** The database as an operator names it: the SQLite file, or the PostgreSQL URL without password. */
  name: string;
  /** One cheap round trip (SELECT 1). */
  probe: () => Promise<unknown>;
  /** How often the probe runs; default 2 s. */
  intervalMs?: number;
  /** Told each change, with the driver's words when it went down. */
  onChange?: (state: DatabaseState, detail: string | null) => void;
}

/**
 * The database's reachability for this process. Any exchange that failed for want of the
 * database marks it down ({@link typed}); the probe, every interval, marks it down or up.
 */
export class DatabaseAvailability {
  private current: DatabaseState = 'up';
  private lastDetail: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private probing: Promise<DatabaseState> | null = null;
  private readonly waiters = new Set<() => void>();
  readonly name: string;

  constructor(private readonly options: DatabaseAvailabilityOptions) {
    this.name = options.name;
  }

  get state(): DatabaseState {
    return this.current;
  }

  /** The driver's words from when it went down (null while up). */
  get detail(): string | null {
    return this.lastDetail;
  }

  /**
   * The error a caller should see: a {@link DatabaseUnavailableError} naming the database when
   * `error` says it is unreachable (marking it down), else `error` itself.
   */
  typed(error: unknown): unknown {
    if (error instanceof DatabaseUnavailableError) return error;
    const detail = unreachableDetail(error);
    if (detail === null) return error;
    this.set('down', detail);
    return new DatabaseUnavailableError(this.name, detail);
  }

  /** Whether `error` is (or says) the database is unreachable; marks it down when it is. */
  isOutage(error: unknown): boolean {
    return this.typed(error) instanceof DatabaseUnavailableError;
  }

  /** An error naming the database as it is down now. */
  unavailable(): DatabaseUnavailableError {
    return new DatabaseUnavailableError(this.name, this.lastDetail ?? 'not reachable');
  }

  /** Runs the probe once (concurrent callers share it) and returns the state it found. */
  check(): Promise<DatabaseState> {
    this.probing ??= this.options
      .probe()
      .then(
        () => this.set('up', null),
        (e: unknown) => {
          const detail = unreachableDetail(e);
          // A probe that fails for another reason (say, a permission) still means no answer.
          return this.set('down', detail ?? (e instanceof Error ? e.message : String(e)));
        },
      )
      .finally(() => {
        this.probing = null;
      });
    return this.probing;
  }

  /** Resolves when the database is up again (at once when it is), or after `timeoutMs`. */
  whenUp(timeoutMs: number): Promise<void> {
    if (this.current === 'up') return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.waiters.add(done);
    });
  }

  start(): void {
    this.timer ??= setInterval(() => void this.check(), this.options.intervalMs ?? 2000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const wake of [...this.waiters]) wake();
  }

  private set(state: DatabaseState, detail: string | null): DatabaseState {
    const changed = state !== this.current;
    this.current = state;
    this.lastDetail = detail;
    if (changed) {
      this.options.onChange?.(state, detail);
      if (state === 'up') for (const wake of [...this.waiters]) wake();
    }
    return state;
  }
}
