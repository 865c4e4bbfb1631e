import { systemClock, type Clock } from './cluster/clock.ts';
import { loadConfig } from './cluster/config.ts';
import { createBackendFromConfig } from './cluster/registry.ts';
import type { Logger } from './logger.ts';
import { buildApp, type App } from './server.ts';
import { openDatabase } from './store/database.ts';

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  log: Logger;
  clock?: Clock;
  /** Overrides the config and LOCKKEEPER_PORT (tests pass 0). */
  port?: number;
}

export interface Started {
  app: App;
  url: string;
  port: number;
  databaseFile: string;
}

const isTrue = (value: string | undefined) => value !== undefined && ['1', 'true', 'yes'].includes(value.toLowerCase());

/**
 * The composition root: config → database (migrated) → backend plugins → server.
 * Anything that fails here fails start-up with a message that names its cause; whatever
 * was opened before the failure is closed again.
 */
export async function startLockkeeper(options: StartOptions): Promise<Started> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const { config, file, dir } = loadConfig(env, cwd);
  options.log.info({ config: file ?? '(defaults: simulated demo cluster)' }, 'configuration loaded');

  const db = await openDatabase({ url: env.LOCKKEEPER_DATABASE_URL ?? config.database.url, cwd });
  let app: App | undefined;
  try {
    const backend = await createBackendFromConfig(config.plugins, {
      clock: options.clock ?? systemClock,
      configDir: dir,
      log: options.log,
    });
    app = buildApp({
      backend,
      log: options.log,
      prisma: db.prisma,
      clock: options.clock ?? systemClock,
      settings: config.operations,
      onClose: () => db.close(),
      health: () => ({ database: db.file }),
      security: {
        bootstrapToken: env.LOCKKEEPER_ADMIN_TOKEN || undefined,
        insecure: isTrue(env.LOCKKEEPER_INSECURE) || (config.server.insecure ?? false),
        allowedOrigins: config.server.allowedOrigins ?? [],
        metrics: config.auth.metrics,
        recheckIntervalMs: config.auth.recheckIntervalMs,
        limits: config.limits,
      },
    });
    const port = options.port ?? (env.LOCKKEEPER_PORT ? Number(env.LOCKKEEPER_PORT) : (config.server.port ?? 4000));
    const host = env.LOCKKEEPER_HOST ?? config.server.host ?? '127.0.0.1';
    const bound = await app.start(port, host);
    options.log.info({ url: bound.url, backend: backend.name, database: db.file }, `Lockkeeper listening: GraphiQL at ${bound.url}`);
    return { app, url: bound.url, port: bound.port, databaseFile: db.file };
  } catch (e) {
    if (app) await app.stop();
    else await db.close();
    throw e;
  }
}
