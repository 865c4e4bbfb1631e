/**
 * vitest globalSetup: one throw-away PostgreSQL server for the whole run (spec
 * high-availability §7), stopped and removed at the end. Tests get its URL through
 * `inject('postgresUrl')` (test/support/test-database.ts), or why there is none.
 */
import type { TestProject } from 'vitest/node';
import { postgresUnavailableReason, startThrowawayPostgres } from './postgres-server.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string | null;
    postgresUnavailable: string | null;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const reason = postgresUnavailableReason();
  if (reason) {
    process.stderr.write(`PostgreSQL tests are skipped: ${reason}\n`);
    project.provide('postgresUrl', null);
    project.provide('postgresUnavailable', reason);
    return () => {};
  }
  const server = await startThrowawayPostgres();
  project.provide('postgresUrl', server.url);
  project.provide('postgresUnavailable', null);
  return () => server.stop();
}
