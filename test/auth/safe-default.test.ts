import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { spawnLockkeeper, PROJECT_ROOT, until } from '../support/child-server.ts';

const run = promisify(execFile);
const BIN = join(PROJECT_ROOT, 'bin', 'lockkeeper.js');
const tempDir = () => mkdtempSync(join(tmpdir(), 'lk-auth-'));

let started: Started | undefined;
afterEach(async () => {
  await started?.app.stop();
  started = undefined;
});

/** A pino logger whose lines the test can read. */
function capturingLog() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), text: () => lines.join('\n') };
}

const start = (env: NodeJS.ProcessEnv, cwd = tempDir(), log = capturingLog()) => startLockkeeper({ log: log.log, env, cwd, port: 0 });

async function gql(url: string, query: string, token?: string) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify({ query }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe('without a token: loopback only', () => {
  it('listens on 127.0.0.1 by default and says so; every local caller is admin (anonymous)', async () => {
    const log = capturingLog();
    started = await start({}, tempDir(), log);
    expect(started.url).toMatch(/^http:\/\/127\.0\.0\.1:/);
    expect(log.text()).toMatch(/authentication off: no token configured, so Lockkeeper listens on loopback \(127\.0\.0\.1\) only/);
    const res = await gql(started.url, 'mutation { configureNode(nodeId: "1", policy: PAUSE) { __typename } }');
    expect(res.body.data.configureNode.__typename).toBe('ClusterNode');
    const row = await started.app.auth.store.list();
    expect(row).toEqual([]);
  });

  // The refusal docs/access-control.md shows (its block is marked run-by this file).
  it('refuses to bind another address, naming the ways out', async () => {
    await expect(start({ LOCKKEEPER_HOST: '0.0.0.0' })).rejects.toThrow(
      /refusing to listen on 0\.0\.0\.0 without authentication.*LOCKKEEPER_ADMIN_TOKEN.*LOCKKEEPER_INSECURE=1/,
    );
  });

  it('binds another address with LOCKKEEPER_INSECURE=1 or server.insecure, warning loudly', async () => {
    const log = capturingLog();
    started = await start({ LOCKKEEPER_HOST: '0.0.0.0', LOCKKEEPER_INSECURE: '1' }, tempDir(), log);
    expect(log.text()).toMatch(/INSECURE: authentication off and listening on 0\.0\.0\.0/);
    await started.app.stop();
    const cwd = tempDir();
    writeFileSync(join(cwd, 'lockkeeper.config.json'), JSON.stringify({ server: { host: '0.0.0.0', insecure: true } }));
    started = await start({}, cwd);
    expect(started.url).toMatch(/^http:\/\/0\.0\.0\.0:/);
  });

  it('answers only loopback Host names (DNS rebinding), and refuses cross-site browser requests', async () => {
    started = await start({});
    const port = started.port;
    const status = (headers: Record<string, string>, path = '/graphql', method = 'POST', body = '{"query":"{ nodes { totalCount } }"}') =>
      new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path, method, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        req.end(body);
      });
    expect(await status({ host: `localhost:${port}` })).toBe(200);
    expect(await status({ host: `evil.example:${port}` })).toBe(403);
    expect(await status({ host: `evil.example:${port}` }, '/control/v1/node', 'GET', '')).toBe(403);
    expect(await status({ origin: 'http://evil.example' })).toBe(403);
    expect(await status({ origin: 'http://evil.example' }, '/control/v1/node/1/drain', 'PUT', '')).toBe(403);
    expect(await status({ origin: `http://127.0.0.1:${port}` })).toBe(200);
    expect(
      await status(
        { 'content-type': 'application/x-www-form-urlencoded' },
        '/graphql',
        'POST',
        'query=mutation%7BstartNodeDrain(nodeId%3A%221%22)%7B__typename%7D%7D',
      ),
    ).toBe(403);
    expect(await status({ 'content-type': 'text/plain' })).toBe(403);
    expect(await status({ 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' })).toBe(403);
    // GraphiQL still opens from a link.
    expect(await status({ accept: 'text/html', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' }, '/graphql', 'GET', '')).toBe(200);
  });
});

// Two cases start several child processes through tsx: tens of seconds each on a loaded two-core machine.
describe('with a token: any address', { timeout: 180_000 }, () => {
  it('LOCKKEEPER_ADMIN_TOKEN turns authentication on; the bootstrap token is an admin named bootstrap-admin', async () => {
    const secret = 'bootstrap-secret-0123456789abcdef';
    const log = capturingLog();
    started = await start({ LOCKKEEPER_HOST: '0.0.0.0', LOCKKEEPER_ADMIN_TOKEN: secret }, tempDir(), log);
    expect(log.text()).toMatch(/authentication on/);
    const url = started.url.replace('0.0.0.0', '127.0.0.1');
    expect((await gql(url, '{ nodes { totalCount } }')).status).toBe(401);
    const res = await gql(url, 'mutation { configureNode(nodeId: "1", policy: PAUSE, reason: "bootstrap") { __typename } }', secret);
    expect(res.body.data.configureNode.__typename).toBe('ClusterNode');
    const audit = await gql(url, '{ auditLog(first: 1) { edges { node { actor action reason } } } }', secret);
    expect(audit.body.data.auditLog.edges[0].node).toEqual({ actor: 'bootstrap-admin', action: 'configureNode', reason: 'bootstrap' });
  });

  it('a short LOCKKEEPER_ADMIN_TOKEN is refused at start', async () => {
    await expect(start({ LOCKKEEPER_ADMIN_TOKEN: 'short' })).rejects.toThrow(/LOCKKEEPER_ADMIN_TOKEN is too short/);
  });

  it('lockkeeper token create / list / revoke work on the database with no server; the server then requires the token', async () => {
    const cwd = tempDir();
    const env = { ...process.env, LOCKKEEPER_DATABASE_URL: `file:${join(cwd, 'auth.db')}`, LOCKKEEPER_LOG_LEVEL: 'silent' };
    const created = await run(process.execPath, [BIN, 'token', 'create', '--scope', 'operator', '--name', 'ci-pipeline', '--expires-in', '30d'], { cwd, env });
    const token = created.stdout.trim();
    expect(token).toMatch(/^lk_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toMatch(/shown this once/);
    const listed = await run(process.execPath, [BIN, 'token', 'list'], { cwd, env });
    expect(listed.stdout).toMatch(/ci-pipeline\s+operator\s+active/);
    expect(listed.stdout).not.toContain(token);

    // A token exists: the server may bind any address and requires it.
    started = await start({ LOCKKEEPER_HOST: '0.0.0.0', LOCKKEEPER_DATABASE_URL: env.LOCKKEEPER_DATABASE_URL }, cwd);
    const url = started.url.replace('0.0.0.0', '127.0.0.1');
    expect((await gql(url, '{ nodes { totalCount } }')).status).toBe(401);
    expect((await gql(url, '{ nodes { totalCount } }', token)).body.data.nodes.totalCount).toBe(4);

    const revoked = await run(process.execPath, [BIN, 'token', 'revoke', 'ci-pipeline'], { cwd, env });
    expect(revoked.stdout).toMatch(/revoked token "ci-pipeline"/);
    const after = await gql(url, '{ nodes { totalCount } }', token);
    expect(after.status).toBe(401);
    expect(after.body.errors[0].message).toMatch(/revoked/);
    const bad = await run(process.execPath, [BIN, 'token', 'create', '--scope', 'root', '--name', 'x'], { cwd, env }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringMatching(/--scope must be one of viewer, operator, admin/) });
  });

  it('the CLI refuses to serve 0.0.0.0 without a token (exit 1) and serves loopback, saying so', async () => {
    const refused = spawnLockkeeper({ LOCKKEEPER_HOST: '0.0.0.0' }, tempDir());
    refused.ready.catch(() => {});
    expect((await refused.exited).code).toBe(1);
    expect(refused.stderr()).toMatch(/refusing to listen on 0\.0\.0\.0 without authentication/);

    const served = spawnLockkeeper({}, tempDir());
    await served.ready;
    expect(served.url).toMatch(/^http:\/\/127\.0\.0\.1:/);
    await until(async () => (/authentication off.*loopback/.test(served.stdout()) ? true : undefined), 'the authentication-off line');
    served.child.kill('SIGTERM');
    expect((await served.exited).code).toBe(0);
  });
});
