import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnLockkeeper } from '../support/child-server.ts';

const BIN = fileURLToPath(new URL('../../bin/lockkeeper.js', import.meta.url));
const tempDir = () => mkdtempSync(join(tmpdir(), 'lk-cli-'));

describe('lockkeeper serve as a process', () => {
  it('refuses a config with a bad key: message names the key, exit code non-zero', async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, 'lockkeeper.config.json'), JSON.stringify({ plugins: [{ name: 'fake', options: { latencyMs: {} } }] }));
    const server = spawnLockkeeper({}, cwd);
    server.ready.catch(() => {});
    const { code } = await server.exited;
    expect(code).toBe(1);
    expect(server.stderr()).toContain('plugins[0].options.latencyMs: unknown key');
  });

  it('refuses an unknown plugin named by LOCKKEEPER_CONFIG', async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, 'other.json'), JSON.stringify({ plugins: [{ name: 'vmware' }] }));
    const server = spawnLockkeeper({ LOCKKEEPER_CONFIG: 'other.json' }, cwd);
    server.ready.catch(() => {});
    expect((await server.exited).code).toBe(1);
    expect(server.stderr()).toContain('plugins[0].name: unknown plugin "vmware"');
  });

  it('refuses a corrupted database file, naming it, and leaves it untouched', async () => {
    const cwd = tempDir();
    mkdirSync(join(cwd, 'data'));
    const file = join(cwd, 'data', 'lockkeeper.db');
    const garbage = Buffer.from('this is not a database, but it is somebody’s file\n'.repeat(100));
    writeFileSync(file, garbage);
    const server = spawnLockkeeper({}, cwd);
    server.ready.catch(() => {});
    expect((await server.exited).code).toBe(1);
    expect(server.stderr()).toContain(file);
    expect(readFileSync(file).equals(garbage)).toBe(true);
  });

  it('serves with LOCKKEEPER_DATABASE_URL and exits 0 on SIGTERM after closing', async () => {
    const cwd = tempDir();
    const server = spawnLockkeeper({ LOCKKEEPER_DATABASE_URL: `file:${join(cwd, 'custom.db')}` }, cwd);
    await server.ready;
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ vms { totalCount } }' }),
    });
    expect(((await res.json()) as any).data.vms.totalCount).toBeGreaterThan(0);
    const health = (await (await fetch(server.url.replace('/graphql', '/healthz'))).json()) as any;
    expect(health.databaseFile).toBe(join(cwd, 'custom.db'));
    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(server.stdout()).toContain('shutting down');
  });
});

describe('lockkeeper simulator as a process', () => {
  const run = (args: string[]) => spawnSync(process.execPath, [BIN, 'simulator', ...args], { encoding: 'utf8', timeout: 60_000 });

  it('--help prints every option with its meaning on stdout and exits 0, starting nothing', () => {
    for (const flag of ['--help', '-h']) {
      const { status, stdout, stderr } = run([flag]);
      expect(stderr).toBe('');
      expect(status).toBe(0);
      expect(stdout).toMatch(/^usage: lockkeeper simulator \[options\]/);
      for (const option of [
        '--config-out FILE',
        '--nodes N',
        '--vms-per-node N',
        '--migrate-ms N',
        '--tenants N',
        '--shards-per-tenant N',
        '--location-config-ms N',
        '--separate-hosts',
        '--hyperconverged',
        '-h, --help',
      ]) {
        expect(stdout).toMatch(new RegExp(`^  ${option} +\\S`, 'm'));
      }
      expect(stdout).not.toContain('simulator ready');
    }
  });

  it('a host layout without --tenants, or both layouts at once, exits 1 before anything starts', () => {
    for (const [args, message] of [
      [['--separate-hosts'], '--separate-hosts says where the pageservers run: give --tenants N too'],
      [['--hyperconverged'], '--hyperconverged says where the pageservers run: give --tenants N too'],
      [['--tenants', '1', '--hyperconverged', '--separate-hosts'], '--hyperconverged and --separate-hosts exclude each other'],
    ] as const) {
      const { status, stdout, stderr } = run([...args]);
      expect(status).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toBe(`lockkeeper simulator: ${message}\n`);
    }
  });

  it('an unknown option exits 1, naming it and pointing at --help', () => {
    const { status, stdout, stderr } = run(['--bogus']);
    expect(status).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain("Unknown option '--bogus'");
    expect(stderr).toContain('lockkeeper simulator --help');
  });
});
