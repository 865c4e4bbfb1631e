/**
 * The closed set of errors a backend may raise. The core decides retry vs. fail from
 * `code` alone, never by parsing messages (docs/architecture.md §2).
 */
const BACKEND_ERROR_CODES = ['NotFound', 'Unavailable', 'Conflict', 'Rejected', 'Transient'] as const;
export type BackendErrorCode = (typeof BACKEND_ERROR_CODES)[number];

export class BackendError extends Error {
  override readonly name = 'BackendError';
  constructor(
    readonly code: BackendErrorCode,
    message: string,
    /** What the error is about, e.g. `{ kind: 'vm', id: 'ns/name' }`. */
    readonly subject?: { kind: 'node' | 'vm' | 'shard'; id: string },
  ) {
    super(message);
  }

  /** Transient and Unavailable may succeed when tried again; the others will not. */
  get retryable(): boolean {
    return this.code === 'Transient' || this.code === 'Unavailable';
  }
}

export const notFound = (kind: 'node' | 'vm' | 'shard', id: string) => new BackendError('NotFound', `${kind} ${id} not found`, { kind, id });

export function isBackendError(e: unknown, code?: BackendErrorCode): e is BackendError {
  return e instanceof BackendError && (code === undefined || e.code === code);
}
