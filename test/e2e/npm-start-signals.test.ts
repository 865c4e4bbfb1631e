import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { PROJECT_ROOT, until } from '../support/child-server.ts';

/**
 * Issue 17, point 6: SIGTERM to the `npm start` process reaches the gateway (a Kubernetes
 * pod whose PID 1 is npm, or an operator's kill) — npm's shell must not stay between them
 * and leave the server running when npm exits.
 */

let dir: string | undefined;
let group: number | undefined;
afterEach(() => {
  // Whatever happened, nothing this test started outlives it (npm runs in a process group of its own).
  if (group) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('SIGTERM to `npm start` shuts the gateway down gracefully and nothing keeps listening', async () => {
  dir = mkdtempSync(join(tmpdir(), 'lockkeeper-npm-start-'));
  const env: Record<string, string | undefined> = {
    ...process.env,
    LOCKKEEPER_PORT: '0',
    LOCKKEEPER_LOG_LEVEL: 'info',
    LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lockkeeper.db')}`,
  };
  delete env.LOCKKEEPER_CONFIG;
  const npm = spawn('npm', ['start', '--silent'], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  group = npm.pid;
  let out = '';
  npm.stdout.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
  const url = await until(async () => /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1], 'the gateway to listen', 90_000);
  const healthz = url.replace(/\/graphql$/, '/healthz');
  expect((await fetch(healthz)).status).toBe(200);

  npm.kill('SIGTERM');
  await exited;
  // The gateway heard it: it said so, and its port is closed.
  await until(async () => (/"msg":"shutting down"/.test(out) ? true : undefined), 'the gateway to log its shutdown', 30_000);
  await until(
    async () =>
      fetch(healthz).then(
        () => undefined,
        () => true,
      ),
    'the port to close',
    30_000,
  );
}, 150_000);
