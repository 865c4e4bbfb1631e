import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import { ConfigError } from '../../src/config/errors.ts';
import { loadConfig, parseConfig } from '../../src/config/load.ts';

function dirWithConfig(content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'lk-config-'));
  writeFileSync(join(dir, 'lockkeeper.config.json'), content);
  return dir;
}

describe('config loading', () => {
  it('defaults to the simulated cluster when no file exists', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lk-config-'));
    const loaded = loadConfig({}, dir);
    expect(loaded.file).toBeNull();
    expect(loaded.config.plugins).toEqual([{ name: 'fake', options: {} }]);
  });

  it('reads ./lockkeeper.config.json and LOCKKEEPER_CONFIG', () => {
    const dir = dirWithConfig('{"server":{"port":4100}}');
    expect(loadConfig({}, dir).config.server.port).toBe(4100);
    const other = join(dir, 'other.json');
    writeFileSync(other, '{"server":{"port":4200}}');
    const loaded = loadConfig({ LOCKKEEPER_CONFIG: other }, dir);
    expect(loaded.config.server.port).toBe(4200);
    expect(loaded.file).toBe(other);
  });

  it('names an unknown key, nested or at the top', () => {
    expect(() => parseConfig({ servr: {} }, 'x.json')).toThrow(/servr: unknown key/);
    expect(() => parseConfig({ server: { prot: 1 } }, 'x.json')).toThrow(/server\.prot: unknown key/);
    expect(() => parseConfig({ plugins: [{ name: 'fake', opts: {} }] }, 'x.json')).toThrow(/plugins\[0\]\.opts: unknown key/);
  });

  it('names a key with a bad value', () => {
    expect(() => parseConfig({ server: { port: 'four' } }, 'x.json')).toThrow(ConfigError);
    expect(() => parseConfig({ server: { port: 'four' } }, 'x.json')).toThrow(/server\.port/);
    expect(() => parseConfig({ plugins: [] }, 'x.json')).toThrow(/plugins/);
  });

  it('neon:H5: a failover attaches 128 shards at once unless operations.maxConcurrentFailovers says otherwise (a whole number ≥ 1)', () => {
    expect(parseConfig({}, 'x.json').operations.maxConcurrentFailovers).toBe(128);
    expect(parseConfig({ operations: { maxConcurrentFailovers: 16 } }, 'x.json').operations.maxConcurrentFailovers).toBe(16);
    for (const bad of [0, -1, 2.5, '64', 10_001]) {
      expect(() => parseConfig({ operations: { maxConcurrentFailovers: bad } }, 'x.json')).toThrow(ConfigError);
      expect(() => parseConfig({ operations: { maxConcurrentFailovers: bad } }, 'x.json')).toThrow(/operations\.maxConcurrentFailovers/);
    }
  });

  it('fills every section the file leaves out with the schema defaults', () => {
    expect(parseConfig({ limits: { maxDepth: 4 } }, 'x.json')).toEqual({ ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, maxDepth: 4 } });
  });

  it('takes the port, host, insecure flag and database from the environment over the file', () => {
    const dir = dirWithConfig('{"server":{"port":4100,"host":"::1"},"database":{"url":"file:a.db"}}');
    // A relative file: URL in the file is the file's folder's; one in the environment stays the working directory's.
    expect(loadConfig({}, dir).config).toMatchObject({ server: { port: 4100, host: '::1', insecure: false }, database: { url: `file:${join(dir, 'a.db')}` } });
    const env = { LOCKKEEPER_PORT: '4300', LOCKKEEPER_HOST: '0.0.0.0', LOCKKEEPER_INSECURE: 'yes', LOCKKEEPER_DATABASE_URL: 'file:b.db' };
    expect(loadConfig(env, dir).config).toMatchObject({ server: { port: 4300, host: '0.0.0.0', insecure: true }, database: { url: 'file:b.db' } });
  });

  it('refuses a LOCKKEEPER_CONFIG that does not exist, and invalid JSON', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lk-config-'));
    expect(() => loadConfig({ LOCKKEEPER_CONFIG: 'missing.json' }, dir)).toThrow(/missing\.json.*does not exist/);
    expect(() => loadConfig({}, dirWithConfig('{ not json'))).toThrow(/not valid JSON/);
  });
});
