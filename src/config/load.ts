import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
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
  return { config: parseConfig(raw, file), file, dir: dirname(file) };
}
