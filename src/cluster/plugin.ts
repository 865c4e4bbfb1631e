import type { z } from 'zod';
import type { LeaseAuthority } from './authority.ts';
import type { ClusterBackend } from './backend.ts';
import type { Clock } from './clock.ts';
import type { PluginStore } from './plugin-store.ts';

/** The header in which a plugin names the authority of each request, `PluginContext.authority().tag()` (ha:L3, ha:L9: simulators record it). */
export const SENDER_HEADER = 'x-lockkeeper-sender';

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
  /**
   * ha:L2, ha:L3, ha:L8: false while this replica does not lead with a good lease (always
   * true alone on SQLite). A plugin checks it at the instant it sends a request that changes
   * the cluster, so that an action under way when the lease was lost (a frozen process, a
   * deposed leader) writes nothing more. Absent: always true.
   */
  mayAct?: () => boolean;
  /**
   * ha:L3, ha:L9: the authority the request about to be sent is issued under — the operation
   * run or epoch of the call being served (`holder@epoch/run-<id>`), the leader's background
   * work (`holder@epoch/background`), or a stand-by's reads (`holder@standby/discovery`). Taken
   * at each request: the plugin calls `assertValid()` first (a request of an epoch that is over,
   * or past the lease deadline on the monotonic clock, is not sent), sends only reads unless it
   * `leads`, names `tag()` in `x-lockkeeper-sender` (the simulators record it) and passes
   * `signal` to the request, which step-down aborts. Absent: not named, never ended.
   */
  authority?: () => LeaseAuthority;
  /**
   * ha:L8: hears every change of this replica's role (true: it now leads), for background
   * work that must start again on a new leader — e.g. a node that went down before the
   * take-over sends no more changes to wake anyone. Returns the unsubscribe function. Absent:
   * the plugin leads from the start and always.
   */
  onLeaderChange?: (listener: (leads: boolean) => void) => () => void;
  /**
   * The gateway's database for this plugin (its own namespace): controller plugins keep
   * registered nodes, intent and generations there, never in memory or files alone.
   * Absent where no database is open (some tests); a plugin that needs it says so.
   */
  store?: PluginStore;
  /**
   * The gateway's explicit opt-in to listen beyond loopback without authentication
   * (`server.insecure` / `LOCKKEEPER_INSECURE=1`): a plugin's own listener refuses a
   * non-loopback address without its token unless it is set (neon:L10). Absent: false.
   */
  insecure?: boolean;
}

/** What a plugin module exports as default. */
export interface ClusterPlugin<Options = unknown> {
  name: string;
  /** Validates the plugin's `options` from the config; unknown keys must be rejected. */
  optionsSchema: z.ZodType<Options>;
  create(options: Options, context: PluginContext): Promise<ClusterBackend>;
  /**
   * True when the cluster the plugin creates lives inside the gateway process (a simulated
   * cluster in memory), so that another replica would see another cluster: such a replica
   * refuses to start beside a live leader (ha:B3). Absent: the cluster is shared.
   */
  readonly inProcess?: boolean;
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
