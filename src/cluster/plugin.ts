import type { z } from 'zod';
import type { ClusterBackend } from './backend.ts';
import type { Clock } from './clock.ts';

export interface PluginContext {
  clock: Clock;
  /** Directory that relative paths in the plugin's options are resolved against. */
  configDir: string;
  /**
   * The gateway's own data directory (the database's folder, `./data/` by default): where a
   * plugin keeps state of its own that has no configured place. Absent outside the gateway.
   */
  dataDir?: string;
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
}

/** What a plugin module exports as default. */
export interface ClusterPlugin<Options = unknown> {
  name: string;
  /** Validates the plugin's `options` from the config; unknown keys must be rejected. */
  optionsSchema: z.ZodType<Options>;
  create(options: Options, context: PluginContext): Promise<ClusterBackend>;
  /**
   * For a plugin that can serve a throw-away demo: the file its demo keeps its state in with
   * these options (null when the options are not the demo). `lockkeeper serve --reset-demo`
   * deletes it, with the database, and refuses when any configured plugin is not a demo.
   */
  demoStateFile?(options: Options, context: PluginContext): string | null;
}

export function definePlugin<Options>(plugin: ClusterPlugin<Options>): ClusterPlugin<Options> {
  return plugin;
}
