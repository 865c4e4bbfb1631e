import type { LockkeeperConfig } from './schema.ts';

const isTrue = (value: string | undefined) => value !== undefined && ['1', 'true', 'yes'].includes(value.toLowerCase());

/**
 * The settings the environment can give, over the config file's: an operator can move a
 * packaged config to another port or database without editing it. The admin token is not
 * a setting (a secret): start.ts hands it to the server itself.
 */
export function applyEnvironment(config: LockkeeperConfig, env: NodeJS.ProcessEnv): LockkeeperConfig {
  return {
    ...config,
    server: {
      ...config.server,
      port: env.LOCKKEEPER_PORT ? Number(env.LOCKKEEPER_PORT) : config.server.port,
      host: env.LOCKKEEPER_HOST ?? config.server.host,
      insecure: isTrue(env.LOCKKEEPER_INSECURE) || config.server.insecure,
    },
    database: { ...config.database, url: env.LOCKKEEPER_DATABASE_URL ?? config.database.url },
    // A replica's own address (a pod IP) is known only where it runs (ha:L5).
    ha: {
      ...config.ha,
      ...((env.LOCKKEEPER_ADVERTISE_URL ?? config.ha.advertiseUrl) && { advertiseUrl: env.LOCKKEEPER_ADVERTISE_URL ?? config.ha.advertiseUrl }),
    },
  };
}
