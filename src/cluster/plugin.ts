import type { z } from 'zod';
import type { ClusterBackend } from './backend.ts';
import type { Clock } from './clock.ts';
import type { PluginStore } from './plugin-store.ts';

export interface PluginContext {
  clock: Clock;
  /** Directory that relative paths in the plugin's options are resolved against. */
  configDir: string;
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
  /**
   * ha:L2, ha:L3, ha:L8: false while this replica does not lead with a good lease (always
   * true alone on SQLite). A plugin checks it at the instant it sends a request that changes
   * the cluster, so that an action under way when the lease was lost (a frozen process, a
   * deposed leader) writes nothing more. Absent: always true.
   */
  mayAct?: () => boolean;
  /**
   * The gateway's database for this plugin (its own namespace): controller plugins keep
   * registered nodes, intent and generations there, never in memory or files alone.
   * Absent where no database is open (some tests); a plugin that needs it says so.
   */
  store?: PluginStore;
}

/** What a plugin module exports as default. */
export interface ClusterPlugin<Options = unknown> {
  name: string;
  /** Validates the plugin's `options` from the config; unknown keys must be rejected. */
  optionsSchema: z.ZodType<Options>;
  create(options: Options, context: PluginContext): Promise<ClusterBackend>;
}

export function definePlugin<Options>(plugin: ClusterPlugin<Options>): ClusterPlugin<Options> {
  return plugin;
}
