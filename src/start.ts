import { issuingAuthority } from './cluster/authority.ts';
import { systemClock, type Clock } from './cluster/clock.ts';
import { loadConfig } from './config/load.ts';
import { AdmissionWebhook } from './http/admission-webhook.ts';
import { createBackendFromConfig, inProcessPlugins } from './config/plugin-registry.ts';
import type { Logger } from './logger.ts';
import { buildApp, type App } from './server.ts';
import { dataDirOf, resetDemo } from './demo-data.ts';
import { DEFAULT_DATABASE_URL, openDatabase } from './store/database.ts';
import { PrismaPluginStore } from './store/plugin-store.ts';
import { acquireServeLock } from './store/serve-lock.ts';
import { leaderFence } from './leadership/fence.ts';
import { replicaLeadership } from './leadership/replica.ts';
import { idleInTransactionTimeoutMs } from './leadership/leadership.ts';
import { NO_FENCE } from './store/repositories.ts';

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  log: Logger;
  clock?: Clock;
  /** Overrides the config and LOCKKEEPER_PORT (tests pass 0). */
  port?: number;
  /** `--reset-demo`: delete the demo's database and cluster state first (src/demo-data.ts). */
  resetDemo?: boolean;
  /** `--demo-slowdown N` (else LOCKKEEPER_DEMO_SLOWDOWN): the simulated cluster's latencies × N. */
  demoSlowdown?: number;
}

export interface Started {
  app: App;
  url: string;
  port: number;
  databaseFile: string;
}

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
  const slowdown = options.demoSlowdown ?? (env.LOCKKEEPER_DEMO_SLOWDOWN ? Number(env.LOCKKEEPER_DEMO_SLOWDOWN) : undefined);
  if (slowdown !== undefined) {
    // Only the simulated cluster has latencies to slow; its schema refuses a bad factor by name.
    config.plugins = config.plugins.map((p) => (p.name === 'fake' ? { ...p, options: { ...p.options, slowdown } } : p));
    options.log.info({ slowdown }, `demo slowed down ${slowdown}×: drains and maintenances can be watched as they progress`);
  }

  // k8s:A3: the TLS files are read before anything is opened: a missing one fails start-up naming its path.
  const webhook = config.admissionWebhook ? new AdmissionWebhook(config.admissionWebhook, dir, options.log) : null;
  const context = { clock: options.clock ?? systemClock, configDir: dir, log: options.log };
  const databaseUrl = config.database.url ?? DEFAULT_DATABASE_URL;
  if (options.resetDemo) {
    await resetDemo({ plugins: config.plugins, databaseUrl, cwd, context });
    options.log.warn('--reset-demo: the demo database and cluster state were deleted; starting over');
  }
  const db = await openDatabase({ url: databaseUrl, cwd, idleInTransactionTimeoutMs: idleInTransactionTimeoutMs(config.ha) });
  let app: App | undefined;
  let releaseServeLock = () => {};
  try {
    if (db.dialect === 'sqlite') releaseServeLock = acquireServeLock(db.file);
    let advertised = config.ha.advertiseUrl ?? '';
    const leadership =
      db.dialect === 'postgresql'
        ? await replicaLeadership(db, config, await inProcessPlugins(config.plugins), { address: () => advertised, log: options.log })
        : undefined;
    const backend = await createBackendFromConfig(config.plugins, {
      ...context,
      ...(db.dialect === 'sqlite' && { dataDir: dataDirOf(db.file) }),
      insecure: config.server.insecure,
      // ha:L8: the plugins' own requests that change the cluster are gated by the lease too.
      ...(leadership && {
        mayAct: () => leadership.canAct(),
        authority: () => issuingAuthority(() => leadership.authority()),
        onLeaderChange: (listener: (leads: boolean) => void) => leadership.onChange((s) => listener(s.role === 'leader')),
      }),
      // ha:L3: the plugins' writes to their store are fenced by this replica's epoch, as the operations' commits are.
      storeFor: (plugin) => new PrismaPluginStore(db.prisma, plugin, leadership ? leaderFence(leadership) : NO_FENCE),
    });
    app = buildApp({
      backend,
      log: options.log,
      prisma: db.prisma,
      hotPath: db.hotPath,
      clock: options.clock ?? systemClock,
      // On PostgreSQL the gateway keeps nothing on its node: its own node may go into maintenance (GATEWAY_ON_NODE).
      config: db.dialect === 'postgresql' ? { ...config, operations: { ...config.operations, gatewayVolumeMovable: true } } : config,
      bootstrapToken: env.LOCKKEEPER_ADMIN_TOKEN || undefined,
      onClose: async () => {
        await webhook?.close();
        await db.close().finally(releaseServeLock);
      },
      ...(leadership && { leadership }),
      ...(db.postgres && { postgresUrl: db.postgres.url }),
      health: () => ({ databaseFile: db.file }),
      databaseName: db.file,
    });
    const bound = await app.start(options.port ?? config.server.port, config.server.host);
    advertised ||= new URL(bound.url).origin;
    if (webhook && config.admissionWebhook) await webhook.listen(config.admissionWebhook.port, config.admissionWebhook.host);
    const dashboard = new URL('/', bound.url).href;
    options.log.info(
      { url: bound.url, dashboard, backend: backend.name, database: db.file },
      `Lockkeeper listening: dashboard at ${dashboard}, GraphiQL at ${bound.url}`,
    );
    return { app, url: bound.url, port: bound.port, databaseFile: db.file };
  } catch (e) {
    if (app) await app.stop();
    else {
      await webhook?.close();
      await db.close();
    }
    releaseServeLock();
    throw e;
  }
}
