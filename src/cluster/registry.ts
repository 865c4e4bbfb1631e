import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ClusterBackend } from './backend.ts';
import { ConfigError, describeIssues, type PluginEntry } from './config.ts';
import type { ClusterPlugin, PluginContext } from './plugin.ts';
import { combineBackends } from './composite.ts';

const pluginsDir = new URL('../../plugins/', import.meta.url);

function pluginModuleUrl(name: string): URL {
  return new URL(`${name}/index.ts`, pluginsDir);
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

/** Creates the backends the config names and joins them into one (see combineBackends). */
export async function createBackendFromConfig(
  entries: readonly PluginEntry[],
  context: PluginContext,
): Promise<ClusterBackend> {
  const backends: ClusterBackend[] = [];
  try {
    for (const [i, entry] of entries.entries()) {
      const where = `plugins[${i}]`;
      const plugin = await loadPlugin(entry.name, `${where}.name`);
      const parsed = plugin.optionsSchema.safeParse(entry.options);
      if (!parsed.success) {
        const detail = describeIssues(parsed.error)
          .split('\n')
          .map((line) => `${where}.options.${line}`)
          .join('\n');
        throw new ConfigError(`invalid options for plugin "${entry.name}":\n${detail}`);
      }
      backends.push(await plugin.create(parsed.data, context));
    }
    return combineBackends(backends);
  } catch (e) {
    await Promise.allSettled(backends.map((b) => b.close()));
    throw e;
  }
}
