/**
 * Issue 17, point 8, without a container engine: the image's own command and environment,
 * read from the Containerfile, run on the checkout's compiled build the way the container
 * runs them (node as the process, no npm in between): it answers /healthz beyond loopback
 * with the bootstrap token set, and SIGTERM shuts it down. Only the paths the container
 * provides (the volume, the fixed port) are swapped for a temporary folder and a free port.
 * The image itself is built and run by deploy/check-image.sh (test/deploy/image.test.ts).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { PROJECT_ROOT, until } from '../support/child-server.ts';

let dir: string | undefined;
let child: ReturnType<typeof spawn> | undefined;
afterEach(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The Containerfile's ENV (KEY=value pairs) and CMD (exec form). */
function runtimeStage(): { env: Record<string, string>; cmd: string[] } {
  const runtime = readFileSync(join(PROJECT_ROOT, 'Containerfile'), 'utf8').replace(/\\\n/g, ' ');
  const env: Record<string, string> = {};
  for (const line of runtime.match(/^ENV .*$/gm) ?? []) for (const m of line.slice(4).matchAll(/(\w+)=(\S+)/g)) env[m[1]!] = m[2]!;
  const cmd = JSON.parse(/^CMD (.*)$/m.exec(runtime)![1]!) as string[];
  return { env, cmd };
}

it('the Containerfile’s CMD and ENV serve /healthz on the compiled build, beyond loopback, and end on SIGTERM', async () => {
  const { env: imageEnv, cmd } = runtimeStage();
  expect(cmd[0]).toBe('node');
  expect(imageEnv).toMatchObject({ NODE_ENV: 'production', LOCKKEEPER_HOST: '0.0.0.0' });
  // The image's build is made by `npm run build`; here the checkout's, brought up to date as `npm start` does.
  execFileSync(process.execPath, ['scripts/build-server.mjs', '--if-stale'], { cwd: PROJECT_ROOT, stdio: 'ignore' });
  dir = mkdtempSync(join(tmpdir(), 'lockkeeper-image-cmd-'));
  const env: Record<string, string | undefined> = {
    ...process.env,
    ...imageEnv,
    LOCKKEEPER_PORT: '0',
    LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lockkeeper.db')}`,
    LOCKKEEPER_LOG_LEVEL: 'info',
    // deploy/deployment.yaml sets it from the Secret: beyond loopback, authentication is on.
    LOCKKEEPER_ADMIN_TOKEN: 'image-command-test-0123456789abcdef',
  };
  delete env.LOCKKEEPER_CONFIG;
  child = spawn(process.execPath, cmd.slice(1), { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
  const url = await until(async () => /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1], 'the gateway to listen', 90_000);
  const { port, hostname } = new URL(url);
  expect(hostname).toBe('0.0.0.0');
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  expect(health.status).toBe(200);
  // Authentication is on: GraphQL without the token is refused, with it answered.
  const query = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ nodes { totalCount } }' }) };
  const anonymous = await fetch(`http://127.0.0.1:${port}/graphql`, query);
  expect(anonymous.status, await anonymous.text()).toBe(401);
  const authed = await fetch(`http://127.0.0.1:${port}/graphql`, {
    ...query,
    headers: { ...query.headers, authorization: `Bearer ${env.LOCKKEEPER_ADMIN_TOKEN}` },
  });
  expect(authed.status).toBe(200);
  expect(((await authed.json()) as { data: { nodes: { totalCount: number } } }).data.nodes.totalCount).toBeGreaterThan(0);

  child.kill('SIGTERM');
  expect(await exited).toBe(0);
  expect(out).toMatch(/"msg":"shutting down"/);
}, 150_000);
