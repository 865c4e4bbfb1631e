/**
 * Every relative path written in the config file is resolved against the file's folder —
 * `database.url` as well as plugin options (`statePath`, `kubeconfigPath`, `stateFile`) —
 * whatever the working directory; paths from the environment stay relative to the working
 * directory (issue 17 point 6).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper } from '../../src/start.ts';
import { tempGateways } from '../support/temp-gateway.ts';

const gateways = tempGateways('lk-paths-');

function layout() {
  const dir = gateways.dir();
  const conf = join(dir, 'etc');
  const work = join(dir, 'elsewhere');
  mkdirSync(conf);
  mkdirSync(work);
  writeFileSync(
    join(conf, 'lockkeeper.json'),
    JSON.stringify({
      database: { url: 'file:./db/lockkeeper.db' },
      plugins: [{ name: 'fake', options: { topology: 'empty', statePath: 'state/cluster.json' } }],
    }),
  );
  return { conf, work, env: { LOCKKEEPER_CONFIG: join(conf, 'lockkeeper.json') } };
}

describe('relative paths in the config', () => {
  it('database.url and statePath resolve against the config file’s folder, not the working directory', async () => {
    const { conf, work, env } = layout();
    const started = gateways.track(await startLockkeeper({ log: createLogger('silent'), env, cwd: work, port: 0 }));
    expect(started.databaseFile).toBe(join(conf, 'db', 'lockkeeper.db'));
    expect(existsSync(join(conf, 'state', 'cluster.json'))).toBe(true);
    expect(existsSync(join(work, 'db'))).toBe(false);
  });

  it('LOCKKEEPER_DATABASE_URL stays relative to the working directory', async () => {
    const { work, env } = layout();
    const started = gateways.track(
      await startLockkeeper({ log: createLogger('silent'), env: { ...env, LOCKKEEPER_DATABASE_URL: 'file:./here.db' }, cwd: work, port: 0 }),
    );
    expect(started.databaseFile).toBe(join(work, 'here.db'));
  });

  it('absolute URLs, file:// URLs and query suffixes are kept', () => {
    const { conf, work, env } = layout();
    for (const [url, expected] of [
      ['file:/abs/x.db', 'file:/abs/x.db'],
      ['file:///abs/x.db', 'file:///abs/x.db'],
      ['file:./x.db?mode=rwc', `file:${join(conf, 'x.db')}?mode=rwc`],
    ]) {
      writeFileSync(env.LOCKKEEPER_CONFIG, JSON.stringify({ database: { url } }));
      expect(loadConfig(env, work).config.database.url).toBe(expected);
    }
  });
});
