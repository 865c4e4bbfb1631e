import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ClusterBackend } from '../cluster/backend.ts';
import { combineBackends } from '../cluster/composite.ts';
import { HostConflictError, nodeAliases } from '../cluster/hyperconverged.ts';
import { OPTIONAL_PARTS, PartConflictError, partProviders } from '../cluster/parts.ts';
import type { ClusterPlugin, PluginContext } from '../cluster/plugin.ts';
import type { PluginStore } from '../cluster/plugin-store.ts';
import { issueLines } from '../cluster/zod-issues.ts';
import { COMPILED, projectPath } from '../project-root.ts';
import { ConfigError } from './errors.ts';
import type { PluginEntry } from './schema.ts';

/** The plugins' folder: their TypeScript, or the compiled build's (`dist/plugins`, see scripts/build.mjs). */
const pluginsDir = pathToFileURL(projectPath(COMPILED ? 'dist/plugins/' : 'plugins/'));

function pluginModuleUrl(name: string): URL {
  return new URL(`${name}/index.${COMPILED ? 'js' : 'ts'}`, pluginsDir);
}

/**
 * Loads one plugin by folder name. Core code never imports a plugin statically: only the
 * names in the config are loaded, so a broken or heavy plugin costs nothing when unused.
 */
export async function loadPlugin(name: string, where: string): Promise<ClusterPlugin> {
  const url = pluginModuleUrl(name);
  if (!existsSync(fileURLToPath(url))) {
    throw new ConfigError(`${where}: unknown plugin "${name}" (no ${fileURLToPath(url)})`);
  }
  const mod = (await import(url.href)) as { default?: ClusterPlugin };
  if (!mod.default || typeof mod.default.create !== 'function') {
    throw new ConfigError(`${where}: plugin "${name}" has no default export made with definePlugin()`);
  }
  return mod.default;
}

/** Workload calls go to the one backend that serves the kind: two would each think they own it. */
function checkOneServerPerWorkload(backends: readonly ClusterBackend[]): void {
  const vmBackends = backends.filter((b) => b.capabilities.vms);
  const shardBackends = backends.filter((b) => b.capabilities.shards);
  if (vmBackends.length > 1) throw new ConfigError(`plugins: more than one plugin serves VMs (${vmBackends.map((b) => b.name).join(', ')})`);
  if (shardBackends.length > 1) throw new ConfigError(`plugins: more than one plugin serves shards (${shardBackends.map((b) => b.name).join(', ')})`);
  try {
    for (const part of OPTIONAL_PARTS) partProviders(part, backends);
    for (const b of backends) nodeAliases(b.hosts?.() ?? {});
  } catch (e) {
    if (e instanceof PartConflictError || e instanceof HostConflictError) throw new ConfigError(`plugins: ${e.message.replace(/^plugins: /, '')}`);
    throw e;
  }
}

/**
 * The plugins of the config whose cluster lives inside the gateway process (`inProcess`,
 * declared by the plugin), so that no other replica sees it (ha:B3).
 */
export async function inProcessPlugins(entries: readonly PluginEntry[]): Promise<string[]> {
  const names = [...new Set(entries.map((e) => e.name))];
  const plugins = await Promise.all(names.map((name, i) => loadPlugin(name, `plugins[${i}].name`)));
  return plugins.filter((p) => p.inProcess === true).map((p) => p.name);
}

/** Creates the backends the config names and joins them into one (see combineBackends). */
export async function createBackendFromConfig(
  entries: readonly PluginEntry[],
  context: PluginContext & { storeFor?: (plugin: string) => PluginStore },
): Promise<ClusterBackend> {
  const { storeFor, ...shared } = context;
  const backends: ClusterBackend[] = [];
  try {
    for (const [i, entry] of entries.entries()) {
      const where = `plugins[${i}]`;
      const plugin = await loadPlugin(entry.name, `${where}.name`);
      const parsed = plugin.optionsSchema.safeParse(entry.options);
      if (!parsed.success) {
        const detail = issueLines(parsed.error)
          .map((line) => `${where}.options.${line}`)
          .join('\n');
        throw new ConfigError(`invalid options for plugin "${entry.name}":\n${detail}`);
      }
      backends.push(await plugin.create(parsed.data, { ...shared, ...(storeFor && { store: storeFor(entry.name) }) }));
    }
    checkOneServerPerWorkload(backends);
    return combineBackends(backends);
  } catch (e) {
    await Promise.allSettled(backends.map((b) => b.close()));
    throw e;
  }
}
