import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../support/stopped-app-gc.ts', import.meta.url));

describe('a stopped app', () => {
  it('is garbage once dropped: nothing process-wide (the metrics registry under prom-client’s GC observer) keeps it', async () => {
    // On SQLite, as a rehearsal's samples run, whatever the suite's database (test:postgresql).
    const env = { ...process.env };
    delete env.LOCKKEEPER_TEST_DATABASE;
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--import', 'tsx', script], { timeout: 120_000, env });
    expect(JSON.parse(stdout)).toEqual({ collected: true });
  }, 150_000);
});
