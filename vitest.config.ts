import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // graphql@16 ships CJS (main) and ESM (module) builds. Node, and so every dependency,
    // loads the CJS one; Vite would give our sources the ESM one, and graphql refuses
    // types from "another realm". One copy for all.
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Time limits only catch a hang: no test passes or fails on how long it took, so they are
    // sized for the slowest honest case, two copies of the suite at once on two loaded cores.
    testTimeout: 300_000,
    hookTimeout: 300_000,
    // Two cores: keep forks few so end-to-end servers and Chromium are not starved.
    pool: 'forks',
    maxWorkers: 2,
    env: { LOCKKEEPER_LOG_LEVEL: 'silent' },
  },
});
