import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { describeIssues } from '../cluster/zod-issues.ts';
import { applyEnvironment } from './environment.ts';
import { ConfigError } from './errors.ts';
import { configSchema, type LockkeeperConfig } from './schema.ts';

export interface LoadedConfig {
  config: LockkeeperConfig;
  /** File the config came from; null when the built-in default is used. */
  file: string | null;
  /** Relative paths in plugin options are resolved against this directory. */
  dir: string;
}

export function parseConfig(raw: unknown, source: string): LockkeeperConfig {
  const result = configSchema.safeParse(raw);
  if (!result.success) throw new ConfigError(`invalid config ${source}:\n${describeIssues(result.error)}`);
  return result.data;
}

/**
 * Finds the config: `LOCKKEEPER_CONFIG` when set (the file must exist), else
 * `./lockkeeper.config.json` when present, else the defaults (the simulated cluster).
 * The environment's settings (LOCKKEEPER_PORT …) then take precedence over the file's.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): LoadedConfig {
  const { config, file, dir } = readConfigFile(env, cwd);
  return { config: applyEnvironment(config, env), file, dir };
}

function readConfigFile(env: NodeJS.ProcessEnv, cwd: string): LoadedConfig {
  const explicit = env.LOCKKEEPER_CONFIG;
  const file = explicit ? resolve(cwd, explicit) : resolve(cwd, 'lockkeeper.config.json');
  if (!existsSync(file)) {
    if (explicit) throw new ConfigError(`config file ${file} (LOCKKEEPER_CONFIG) does not exist`);
    return { config: parseConfig({}, '(defaults)'), file: null, dir: cwd };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ConfigError(`config file ${file} is not valid JSON: ${(e as Error).message}`);
  }
  const config = parseConfig(raw, file);
  return { config: { ...config, database: { ...config.database, url: relativeTo(dirname(file), config.database.url) } }, file, dir: dirname(file) };
}

/**
 * Every relative path written in the config file is resolved against the file's folder, as
 * plugin options are (`kubeconfigPath`, `stateFile`, `statePath`): a relative `file:` URL in
 * `database.url` becomes absolute here. Paths from the environment (LOCKKEEPER_DATABASE_URL)
 * and the defaults stay relative to the working directory.
 */
function relativeTo(dir: string, url: string | undefined): string | undefined {
  if (url === undefined || !url.startsWith('file:') || url.startsWith('file://')) return url;
  const [path = '', query] = url.slice('file:'.length).split(/(?=\?)/, 2);
  if (path === '' || path.startsWith(':memory:') || isAbsolute(path)) return url;
  return `file:${resolve(dir, path)}${query ?? ''}`;
}
