import { ConflictError, NotFoundError, OperationLimitReachedError, PreconditionFailedError, UnavailableError } from '../../domain/errors.ts';
import type { AdmissionRefusal } from '../../domain/storage/admission.ts';

/** An admission refusal (storage:S3, storage:S4) as the typed error callers act on. */
export function refusalError(refusal: AdmissionRefusal, nodeId: string, runningOperationId: string | null): Error {
  switch (refusal.error) {
    case 'NotFound':
      return new NotFoundError('node', nodeId);
    case 'Conflict':
      return new ConflictError(refusal.message, runningOperationId);
    case 'OperationLimitReached':
      return new OperationLimitReachedError(refusal.limit, refusal.message);
    case 'Unavailable':
      return new UnavailableError(refusal.message, nodeId);
    case 'PreconditionFailed':
      return new PreconditionFailedError(refusal.reason, refusal.message);
  }
}
