import { isAbsolute, resolve } from 'node:path';
import { systemClock, type Clock } from '../../src/cluster/clock.ts';
import { definePlugin, type PluginContext } from '../../src/cluster/plugin.ts';
import { PageserverBackend } from './backend.ts';
import { pageserverOptionsSchema, type PageserverOptions } from './options.ts';
import { UpcallServer } from './upcall-server.ts';

/** A running pageserver backend with its upcall listener. */
export class PageserverController extends PageserverBackend {
  private upcalls: UpcallServer | undefined;
  /** Base URL of the upcall listener (`…/upcall/v1/re-attach` lives under it). */
  upcallUrl = '';

  /** @internal */
  attachUpcalls(server: UpcallServer): void {
    this.upcalls = server;
    this.upcallUrl = server.url;
  }

  override async close(): Promise<void> {
    await this.upcalls?.close();
    this.upcalls = undefined;
    await super.close();
  }
}

/** Creates, discovers, starts heartbeats and the upcall listener. */
export async function createPageserverBackend(
  options: PageserverOptions,
  context: Pick<PluginContext, 'configDir' | 'log'> & { clock?: Clock; onListenerError?: (e: unknown) => void },
): Promise<PageserverController> {
  const stateFile = isAbsolute(options.stateFile) ? options.stateFile : resolve(context.configDir, options.stateFile);
  const backend = new PageserverController({
    ...options,
    stateFile,
    clock: context.clock ?? systemClock,
    log: context.log,
    onListenerError: context.onListenerError ?? ((e) => context.log.warn({ err: e }, 'a cluster event listener threw')),
  });
  const upcalls = new UpcallServer(backend, { token: options.upcall.token });
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

/** Lockkeeper as the storage controller of Neon pageservers (README "Neon pageservers"). */
const pageserverPlugin = definePlugin<PageserverOptions>({
  name: 'pageserver',
  optionsSchema: pageserverOptionsSchema as unknown as import('zod').ZodType<PageserverOptions>,
  create: (options, context) => createPageserverBackend(options, context),
});

export default pageserverPlugin;

export { PageserverBackend, type DiscoveryReport } from './backend.ts';
export { PageserverRequestError, PageserverResponseError } from './http-client.ts';
export { pageserverOptionsSchema, type PageserverOptions, type PageserverOptionsInput } from './options.ts';
export { formatTenantShardId, parseTenantShardId, type TenantShardId } from './shard-id.ts';
export { PageserverStateFileError } from './state-file.ts';
export type * from './wire.ts';
