import { isAbsolute, resolve } from 'node:path';
import { systemClock, type Clock } from '../../src/cluster/clock.ts';
import { definePlugin, type PluginContext } from '../../src/cluster/plugin.ts';
import { PageserverBackend } from './backend.ts';
import { pageserverOptionsSchema, type PageserverOptions } from './options.ts';
import type { ResolveHost } from './registration.ts';
import { UpcallServer } from './upcall-server.ts';

/** A running pageserver backend with its upcall listener. */
export class PageserverController extends PageserverBackend {
  private upcallServer: UpcallServer | undefined;
  /** Base URL of the upcall listener (`…/upcall/v1/re-attach` lives under it). */
  upcallUrl = '';

  /** @internal */
  attachUpcalls(server: UpcallServer): void {
    this.upcallServer = server;
    this.upcallUrl = server.url;
  }

  override async close(): Promise<void> {
    await this.upcallServer?.close();
    this.upcallServer = undefined;
    await super.close();
  }
}

export class PageserverConfigError extends Error {
  override readonly name = 'PageserverConfigError';
}

/** Creates the backend (intent in `context.store`), starts the upcall listener, discovers, starts heartbeats. */
const isLoopback = (host: string) => /^(localhost|127(\.\d{1,3}){3}|::1|::ffff:127(\.\d{1,3}){3})$/i.test(host.replace(/^\[|\]$/g, ''));

/**
 * neon:L10: the upcall listener is as guarded as the main server: beyond loopback it needs
 * `upcall.token` (re-attach bumps generations), unless the gateway's explicit insecure
 * opt-in (`server.insecure` / `LOCKKEEPER_INSECURE=1`) is set, which is logged as such.
 */
function checkUpcallListener(upcall: PageserverOptions['upcall'], context: Pick<PluginContext, 'log' | 'insecure'>): void {
  if (upcall.token || isLoopback(upcall.host)) return;
  if (!context.insecure)
    throw new PageserverConfigError(
      `refusing to listen for pageserver upcalls on ${upcall.host} without upcall.token: anyone who reaches it could force generation bumps. ` +
        "Set upcall.token (the pageservers' control_plane_api_token), listen on loopback, or allow it explicitly with server.insecure: true / LOCKKEEPER_INSECURE=1",
    );
  context.log.warn(
    { upcallHost: upcall.host },
    `INSECURE: pageserver upcalls on ${upcall.host} without upcall.token: anyone who reaches this port can re-attach a node (server.insecure / LOCKKEEPER_INSECURE)`,
  );
}

export async function createPageserverBackend(
  options: PageserverOptions,
  context: Pick<PluginContext, 'configDir' | 'log' | 'store' | 'mayAct' | 'authority' | 'insecure'> & {
    clock?: Clock;
    onListenerError?: (e: unknown) => void;
    resolveHost?: ResolveHost;
  },
): Promise<PageserverController> {
  if (!context.store) {
    throw new PageserverConfigError('the pageserver plugin keeps its intent and generations in the gateway database, and none was given (PluginContext.store)');
  }
  const stateFile =
    options.stateFile === undefined ? undefined : isAbsolute(options.stateFile) ? options.stateFile : resolve(context.configDir, options.stateFile);
  const backend = new PageserverController({
    ...options,
    stateFile,
    store: context.store,
    clock: context.clock ?? systemClock,
    log: context.log,
    ...(context.mayAct && { mayAct: context.mayAct }),
    ...(context.authority && { authority: context.authority }),
    ...(context.resolveHost && { resolveHost: context.resolveHost }),
    onListenerError: context.onListenerError ?? ((e) => context.log.warn({ err: e }, 'a cluster event listener threw')),
  });
  checkUpcallListener(options.upcall, context);
  const upcalls = new UpcallServer(
    {
      reAttach: (r, caller) => backend.upcalls.reAttach(r, caller),
      validate: (r, caller) => backend.upcalls.validate(r, caller),
      refused: (kind, caller, status, why) => backend.upcalls.refused(kind, caller, status, why),
    },
    { token: options.upcall.token, ...(context.mayAct && { mayAct: context.mayAct }) },
  );
  try {
    const url = await upcalls.listen(options.upcall.port, options.upcall.host);
    backend.attachUpcalls(upcalls);
    // The pageservers' control_plane_api must point here: say where (the port may have been picked at random).
    context.log.info({ upcallUrl: `${url}/upcall/v1/` }, `pageserver upcalls listening at ${url}/upcall/v1/ (the pageservers' control_plane_api)`);
    await backend.start();
    return backend;
  } catch (e) {
    await backend.close().catch(() => {});
    await upcalls.close().catch(() => {});
    throw e;
  }
}

/** Lockkeeper as the storage controller of Neon pageservers (docs/pageserver.md). */
const pageserverPlugin = definePlugin<PageserverOptions>({
  name: 'pageserver',
  optionsSchema: pageserverOptionsSchema as unknown as import('zod').ZodType<PageserverOptions>,
  create: (options, context) => createPageserverBackend(options, context),
});

export default pageserverPlugin;

export { PageserverBackend } from './backend.ts';
export type { DiscoveryReport } from './discovery.ts';
export { PageserverRequestError, PageserverResponseError } from './http-client.ts';
export { pageserverOptionsSchema, type PageserverOptions, type PageserverOptionsInput } from './options.ts';
export { formatTenantShardId, parseTenantShardId, type TenantShardId } from './shard-id.ts';
export { PageserverStateFileError } from './state-file.ts';
export type { ResolveHost } from './registration.ts';
export type * from './wire.ts';
