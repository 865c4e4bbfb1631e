import { BackendError } from '../cluster/errors.ts';
import { ConflictError, LockkeeperError, NotFoundError, PreconditionFailedError, UnavailableError } from '../domain/errors.ts';

/** Turns a backend's error into the typed error a GraphQL caller can act on; other faults pass through (masked). */
export function toTypedError(error: unknown): unknown {
  if (!(error instanceof BackendError) || error instanceof LockkeeperError) return error;
  switch (error.code) {
    case 'NotFound':
      return new NotFoundError(error.subject?.kind ?? 'node', error.subject?.id ?? 'unknown');
    case 'Unavailable':
      return new UnavailableError(error.message, error.subject?.kind === 'node' ? error.subject.id : null);
    case 'Conflict':
      return new ConflictError(error.message);
    case 'Rejected':
      return new PreconditionFailedError('BACKEND_REJECTED', error.message);
    case 'Transient':
      return new UnavailableError(`${error.message} (transient; try again)`);
  }
}

/** Runs a backend call, rethrowing its error as a typed one. */
export async function typedBackendCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    throw toTypedError(e);
  }
}
