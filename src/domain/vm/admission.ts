/**
 * Harvester's admission check of the maintenance-strategy label (k8s:A1, k8s:A2), as a
 * pure decision on an AdmissionReview request. The HTTP side is src/http/admission-webhook.ts.
 */
import { MAINTENANCE_STRATEGY_LABEL } from '../labels.ts';
import { invalidStrategyMessage, isMaintenanceStrategy } from './strategy.ts';

export interface StrategyAdmissionRequest {
  operation: string;
  object: { metadata?: { labels?: Record<string, string> } } | null;
  oldObject: { metadata?: { labels?: Record<string, string> } } | null;
}

/** `metav1.Status` of a denial (k8s:A2). */
interface AdmissionStatus {
  status: 'Failure';
  code: 422;
  reason: 'Invalid';
  message: string;
  details: { causes: { type: 'FieldValueInvalid'; field: string; message: string }[] };
}

export type StrategyAdmission = { allowed: true; warning: string | null } | { allowed: false; status: AdmissionStatus };

const FIELD = `metadata.labels[${MAINTENANCE_STRATEGY_LABEL}]`;
const labelOf = (o: StrategyAdmissionRequest['object']) => o?.metadata?.labels?.[MAINTENANCE_STRATEGY_LABEL];

/**
 * k8s:A1: no label (removal included) → allowed; one of the four exact values → allowed;
 * an UPDATE keeping the same invalid value → allowed (grandfathered, with a warning);
 * anything else → denied with Harvester's 422 (k8s:A2). Other operations are not checked.
 */
export function admitStrategyLabel(request: StrategyAdmissionRequest): StrategyAdmission {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return { allowed: true, warning: null };
  const value = labelOf(request.object);
  if (value === undefined || isMaintenanceStrategy(value)) return { allowed: true, warning: null };
  if (request.operation === 'UPDATE' && labelOf(request.oldObject) === value) {
    return { allowed: true, warning: `${FIELD} keeps the invalid value "${value}" it already had; it is treated as Migrate (vm:V2)` };
  }
  const message = invalidStrategyMessage(value);
  return {
    allowed: false,
    status: { status: 'Failure', code: 422, reason: 'Invalid', message, details: { causes: [{ type: 'FieldValueInvalid', field: FIELD, message }] } },
  };
}
