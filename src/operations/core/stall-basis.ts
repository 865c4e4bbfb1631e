import type { ClusterBackend, LatencySettings } from '../../cluster/backend.ts';
import type { OperationSettings } from '../../config/schema.ts';
import type { StepRecord } from '../../domain/operations.ts';

/** Where a step's expected duration comes from when none of its operation's steps finished yet (domain/stall.ts). */
export interface StallBasis {
  /** The backend's declared latency for the step's action; null when it declares none. */
  declaredMs(step: Pick<StepRecord, 'action'>): number | null;
  /** `operations.expectedStepMs` from the config. */
  defaultMs: number;
}

/** Step actions and the simulated cluster's latencies they take (a restart elsewhere is a stop and a start). */
const DECLARED: Record<string, (l: LatencySettings) => number> = {
  CUT_OVER: (l) => l.cutOver,
  MIGRATE: (l) => l.migrate,
  STOP: (l) => l.stop,
  RESTART: (l) => l.stop + l.start,
};

/** Only a simulated cluster declares its latencies; a real backend's steps go by the median, else the configured default. */
export function stallBasisOf(backend: ClusterBackend, settings: OperationSettings): StallBasis {
  return {
    declaredMs: (step) => {
      const latency = DECLARED[step.action];
      return latency && backend.simulation ? latency(backend.simulation.getLatencies()) : null;
    },
    defaultMs: settings.expectedStepMs,
  };
}
