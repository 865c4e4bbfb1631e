import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores: keep forks few so end-to-end servers and Chromium are not starved.
    pool: 'forks',
    maxWorkers: 2,
    env: { LOCKKEEPER_LOG_LEVEL: 'silent' },
  },
});
