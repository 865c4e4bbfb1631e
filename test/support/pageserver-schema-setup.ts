/**
 * vitest setup: every pageserver simulator a test makes is checked against Neon's own API
 * (test/support/neon-schemas.ts): each request it receives and each answer it sends. A test
 * in which something sent or answered what Neon's pageserver API does not take fails.
 * A test that sends a bad request on purpose takes the violations it expects with
 * `takePageserverSchemaViolations()`.
 */
import { afterEach, expect } from 'vitest';
import { PageserverSim } from '../../simulators/pageserver/index.ts';
import { neonSchemas } from './neon-schemas.ts';
import { pageserverSchemaViolations } from './pageserver-schema-violations.ts';

PageserverSim.instrument = (sim) => {
  const schemas = neonSchemas();
  const violations = pageserverSchemaViolations();
  sim.observer = {
    request: (e) => violations.push(...schemas.checkRequest(e).map((v) => `node ${sim.nodeId}: ${v}`)),
    answer: (e, status, body) => violations.push(...schemas.checkResponse(e, status, body).map((v) => `node ${sim.nodeId}: ${v}`)),
  };
};

afterEach(() => {
  const violations = pageserverSchemaViolations().splice(0);
  expect(violations, "requests or answers Neon's pageserver API does not take (test/support/schemas/neon)").toEqual([]);
});
