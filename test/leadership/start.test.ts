/**
 * The composition root on PostgreSQL: a gateway started on a postgres URL leads alone; one
 * whose backend is the in-process simulated cluster refuses to start beside another live
 * leader, and says why (ha:B3).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper } from '../../src/start.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();

describe.skipIf(skip)(skip ?? 'lockkeeper serve on PostgreSQL', () => {
  it('leads alone on an empty database; with the fake backend it refuses to start while another replica leads (ha:B3)', { timeout: 120_000 }, async () => {
    const url = await createPostgresDatabase();
    const cwd = mkdtempSync(join(tmpdir(), 'lk-pg-start-'));
    const env = { LOCKKEEPER_DATABASE_URL: url, LOCKKEEPER_LOG_LEVEL: 'silent' };
    const first = await startLockkeeper({ env, cwd, log: createLogger('silent'), port: 0 });
    try {
      const health = (await (await fetch(new URL('/healthz', first.url))).json()) as Record<string, unknown>;
      expect(health).toMatchObject({ role: 'leader', epoch: 1, databaseStatus: 'up', backend: 'fake' });
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      const { rows } = await c.query(`SELECT "address" FROM "LeaderLease"`);
      await c.end();
      // The lease says where the leader serves (its address once it listened).
      expect([new URL(first.url).origin, '']).toContain(rows[0].address);

      await expect(startLockkeeper({ env, cwd, log: createLogger('silent'), port: 0 })).rejects.toThrow(
        /another replica \(.+\) leads on postgresql:\/\/postgres@127\.0\.0\.1:\d+\/lk_test_\w+, and this replica's backend is the in-process "fake" simulated cluster.*lockkeeper simulator/,
      );
    } finally {
      await first.app.stop();
    }
  });
});
