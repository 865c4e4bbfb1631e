/**
 * Start-up refusals of a second gateway: two `serve` processes on one SQLite file (the
 * second refuses, the token CLI still works, and a server killed with -9 does not block the
 * next), and a PostgreSQL URL that cannot be reached (exit 1 naming host, port and database,
 * not the password).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnLockkeeper, type ChildServer } from '../support/child-server.ts';

const BIN = fileURLToPath(new URL('../../bin/lockkeeper.js', import.meta.url));
const running: ChildServer[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) {
    s.child.kill('SIGKILL');
    await s.exited;
  }
});

describe('one gateway per SQLite file', () => {
  it('a second serve on the same file refuses with a clear message; the token CLI still opens it; kill -9 frees it', { timeout: 240_000 }, async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'lk-lock-'));
    const env = { LOCKKEEPER_DATABASE_URL: `file:${join(cwd, 'lk.db')}` };
    const first = spawnLockkeeper(env, cwd);
    running.push(first);
    await first.ready;

    const second = spawnLockkeeper(env, cwd);
    second.ready.catch(() => {});
    expect((await second.exited).code).toBe(1);
    expect(second.stderr()).toContain(`database ${join(cwd, 'lk.db')} is already served by another lockkeeper process`);

    const token = spawnSync(process.execPath, [BIN, 'token', 'create', '--scope', 'viewer', '--name', 'ci'], {
      cwd,
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    expect(token.status, token.stderr).toBe(0);
    expect(token.stdout).toMatch(/lk_/);

    first.child.kill('SIGKILL');
    await first.exited;
    const third = spawnLockkeeper(env, cwd);
    running.push(third);
    await third.ready;
  });
});

describe('PostgreSQL that cannot be reached', () => {
  it('stops start-up with exit 1, naming host, port and database, never the password', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'lk-pgdown-'));
    const server = spawnLockkeeper({ LOCKKEEPER_DATABASE_URL: 'postgresql://lk:topsecret@127.0.0.1:1/lockkeeper' }, cwd);
    server.ready.catch(() => {});
    expect((await server.exited).code).toBe(1);
    expect(server.stderr()).toContain('cannot open database postgresql://lk@127.0.0.1:1/lockkeeper');
    expect(server.stderr() + server.stdout()).not.toContain('topsecret');
  });
});
