import { defineConfig } from 'vitest/config';

/**
 * Acceptance 6 of spec high-availability: `npm run test:postgresql` (LOCKKEEPER_TEST_DATABASE=
 * postgresql) runs the suites that use a database through test/support/test-database.ts
 * again with every database on PostgreSQL. Left out: a suite whose databases are SQLite
 * files by design (child servers on file: URLs).
 */
const POSTGRESQL_SUITES = [
  'test/store/**/*.test.ts',
  'test/operations/**/*.test.ts',
  'test/graphql/**/*.test.ts',
  'test/rest/**/*.test.ts',
  'test/maintenance/**/*.test.ts',
  'test/rollouts/**/*.test.ts',
];
const NOT_ON_POSTGRESQL = ['test/maintenance/kill-evacuating.test.ts'];
const onPostgres = process.env.LOCKKEEPER_TEST_DATABASE === 'postgresql';

export default defineConfig({
  resolve: {
    // graphql@16 ships CJS (main) and ESM (module) builds. Node, and so every dependency,
    // loads the CJS one; Vite would give our sources the ESM one, and graphql refuses
    // types from "another realm". One copy for all.
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    include: onPostgres ? POSTGRESQL_SUITES : ['test/**/*.test.ts'],
    exclude: onPostgres ? ['**/node_modules/**', ...NOT_ON_POSTGRESQL] : ['**/node_modules/**'],
    // One throw-away PostgreSQL server for the run (spec high-availability §7).
    globalSetup: ['test/support/postgres-global-setup.ts'],
    // Every Kubernetes simulator is checked against kubernetes-models' schemas (k8s issue 12),
    // every pageserver simulator against Neon's pageserver API (issue 28 point 2).
    setupFiles: ['test/support/k8s-schema-setup.ts', 'test/support/pageserver-schema-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores: keep forks few so end-to-end servers and Chromium are not starved.
    pool: 'forks',
    maxWorkers: 2,
    env: { LOCKKEEPER_LOG_LEVEL: 'silent' },
  },
});
