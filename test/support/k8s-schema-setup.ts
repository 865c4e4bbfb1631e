/**
 * vitest setup: every Kubernetes simulator a test starts is checked against the
 * kubernetes-models schemas (test/support/k8s-schemas.ts), and a test that made one store,
 * send or answer an object a real API server would reject fails.
 */
import { afterEach, expect } from 'vitest';
import { K8sSim } from '../../simulators/kubernetes/index.ts';
import { checkSchemas } from './k8s-schemas.ts';

const seen: string[][] = [];
K8sSim.instrument = (sim) => seen.push(checkSchemas(sim));

afterEach(() => {
  const violations = seen.flat();
  seen.length = 0;
  expect(violations, 'objects a real API server would reject (kubernetes-models schemas)').toEqual([]);
});
