import { mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { PluginContext } from './cluster/plugin.ts';
import { ConfigError } from './config/errors.ts';
import { loadPlugin } from './config/plugin-registry.ts';
import type { PluginEntry } from './config/schema.ts';
import { resolveDatabaseFile } from './store/database.ts';
import { acquireServeLock } from './store/serve-lock.ts';

/** The gateway's data directory: the database's folder (`./data/` by default), where plugins keep state that has no configured place. */
export function dataDirOf(databaseFile: string): string {
  return dirname(databaseFile);
}

/**
 * `lockkeeper serve --reset-demo`: the demo starts over. Deletes the database (with its WAL
 * files) and every plugin's demo state file — only when every configured plugin serves a
 * demo, so that no real installation loses its database to a stray flag. Returns what it
 * deleted. Runs before the database is opened.
 */
export async function resetDemo(input: {
  plugins: readonly PluginEntry[];
  databaseUrl: string;
  cwd: string;
  context: Omit<PluginContext, 'dataDir'>;
}): Promise<string[]> {
  const database = resolveDatabaseFile(input.databaseUrl, input.cwd);
  const context: PluginContext = { ...input.context, dataDir: dataDirOf(database) };
  const stateFiles: string[] = [];
  for (const [i, entry] of input.plugins.entries()) {
    const plugin = await loadPlugin(entry.name, `plugins[${i}].name`);
    const parsed = plugin.optionsSchema.safeParse(entry.options);
    const file = parsed.success ? (plugin.demoStateFile?.(parsed.data, context) ?? null) : null;
    if (!file) throw new ConfigError(`--reset-demo only resets the demo cluster; plugins[${i}] ("${entry.name}") is not a demo, so nothing was deleted`);
    stateFiles.push(file);
  }
  const files = [database, `${database}-wal`, `${database}-shm`, ...stateFiles.flatMap((f) => [f, `${f}.tmp`])];
  mkdirSync(dirname(database), { recursive: true });
  // Never under a gateway that is serving this database now (its serve lock says so).
  const release = acquireServeLock(database);
  try {
    for (const f of files) rmSync(f, { force: true });
  } finally {
    release();
  }
  return files;
}
