import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { operationSettingsSchema } from '../operations/settings.ts';

/** Thrown for any problem with the configuration; the message names the file and the key. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

const pluginEntrySchema = z
  .object({
    /** A built-in plugin: a folder under `plugins/`. */
    name: z.string().regex(/^[a-z][a-z0-9-]*$/, 'must be a plugin folder name such as "fake"'),
    options: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();

/** Access control (src/auth); tokens themselves live in the database. */
export const authSettingsSchema = z
  .object({
    /** Scope /metrics needs when authentication is on; "public" serves it to anyone. */
    metrics: z.enum(['public', 'viewer', 'operator', 'admin']).default('viewer'),
    /** How often open WebSockets and event streams re-check their token (revoked by the CLI, expired). */
    recheckIntervalMs: z.number().int().min(100).max(3_600_000).default(5000),
  })
  .strict();

/** Abuse limits (issue 7). */
export const limitSettingsSchema = z
  .object({
    /** Deepest nesting of a GraphQL operation (fragments flattened, introspection exempt). */
    maxDepth: z.number().int().min(1).max(100).default(15),
    /** Static cost of a GraphQL operation: about the values its answer can hold (src/graphql/yoga.ts). */
    maxCost: z.number().int().min(1).default(50_000),
    /** Largest request body (GraphQL over HTTP, REST) and WebSocket message, in bytes. */
    maxBodyBytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
    /** Mutations (GraphQL root fields, REST PUT/DELETE) per token per minute; 0 = unlimited. */
    mutationsPerMinute: z.number().int().min(0).default(120),
  })
  .strict();

export type AuthSettings = z.infer<typeof authSettingsSchema>;
export type LimitSettings = z.infer<typeof limitSettingsSchema>;

export const configSchema = z
  .object({
    server: z
      .object({
        port: z.number().int().min(0).max(65535).optional(),
        host: z.string().min(1).optional(),
        /** Listen on a non-loopback address without authentication (no token). Also LOCKKEEPER_INSECURE=1. */
        insecure: z.boolean().optional(),
        /** Browser origins (e.g. "https://ops.example.com") allowed to call the API: CORS and CSRF checks. */
        allowedOrigins: z.array(z.string().min(1)).optional(),
      })
      .strict()
      .default({}),
    database: z.object({ url: z.string().min(1).optional() }).strict().default({}),
    plugins: z.array(pluginEntrySchema).min(1).default([{ name: 'fake', options: {} }]),
    operations: operationSettingsSchema.default(operationSettingsSchema.parse({})),
    auth: authSettingsSchema.default(authSettingsSchema.parse({})),
    limits: limitSettingsSchema.default(limitSettingsSchema.parse({})),
  })
  .strict();

export type LockkeeperConfig = z.infer<typeof configSchema>;
export type PluginEntry = z.infer<typeof pluginEntrySchema>;

export interface LoadedConfig {
  config: LockkeeperConfig;
  /** File the config came from; null when the built-in default is used. */
  file: string | null;
  /** Relative paths in plugin options are resolved against this directory. */
  dir: string;
}

export function formatIssuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : out ? `.${String(part)}` : String(part);
  return out || '(root)';
}

/** Renders zod issues as `key: problem` lines, naming unknown keys themselves. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        const base = formatIssuePath(issue.path);
        return issue.keys
          .map((k) => `${base === '(root)' ? k : `${base}.${k}`}: unknown key`)
          .join('\n');
      }
      return `${formatIssuePath(issue.path)}: ${issue.message}`;
    })
    .join('\n');
}

export function parseConfig(raw: unknown, source: string): LockkeeperConfig {
  const result = configSchema.safeParse(raw);
  if (!result.success) throw new ConfigError(`invalid config ${source}:\n${describeIssues(result.error)}`);
  return result.data;
}

/**
 * Finds the config: `LOCKKEEPER_CONFIG` when set (the file must exist), else
 * `./lockkeeper.config.json` when present, else the defaults (the simulated cluster).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): LoadedConfig {
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
