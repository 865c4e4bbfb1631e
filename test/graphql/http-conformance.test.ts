/**
 * The GraphQL-over-HTTP spec's server audits (the `graphql-http` package's, the spec's
 * reference implementation) against the real listening server, its HTTP guards (host,
 * CSRF, body limit, authentication) and every limit in force: no error, no warning.
 */
import { serverAudits } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await createTestApp();
  const bound = await t.app.start(0, '127.0.0.1');
  url = `http://127.0.0.1:${bound.port}/graphql`;
});
afterAll(async () => {
  await t.stop();
});

describe('GraphQL over HTTP: graphql-http server audits', () => {
  for (const audit of serverAudits({ url: () => url })) {
    it(audit.name, async () => {
      const result = await audit.fn();
      // A notice is the audit's "for your information"; warnings and errors are findings.
      const finding = result.status === 'ok' || result.status === 'notice' ? null : { status: result.status, reason: result.reason };
      expect(finding).toBeNull();
    });
  }
});
