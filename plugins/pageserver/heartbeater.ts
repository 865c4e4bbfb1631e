import type { Clock } from '../../src/cluster/clock.ts';
import type { NodeAvailability } from '../../src/cluster/types.ts';

/** What the heartbeater tracks of one node. */
export interface HeartbeatState {
  availability: NodeAvailability;
  /** Last good heartbeat; null when never seen available (new nodes, and all nodes after a restart: neon:H4). */
  lastOkAt: number | null;
  /** When it entered WARMING_UP (its re-attach). */
  warmingSince: number | null;
  /**
   * ha:L8: its availability was taken over from the previous leader's persisted heartbeats,
   * not seen by this process: the next good heartbeat activates it (neon:H4) all the same.
   */
  inherited?: boolean;
}

/** The verdict of a round for one node (neon:H2, neon:H3). */
export type HeartbeatVerdict = 'available' | 'offline' | 'unchanged';

/**
 * neon:H2–H3, pure: what one round's result means for a node, decided by elapsed time
 * only, never by a count of misses. A good round makes it available. A failing node seen
 * available becomes OFFLINE at the first round that ends `maxOfflineIntervalMs` or more after
 * its last success; a WARMING_UP one once `maxWarmingUpIntervalMs` have passed since it
 * entered WARMING_UP; earlier failures change nothing.
 */
export function heartbeatVerdict(
  state: HeartbeatState,
  ok: boolean,
  roundEndedAt: number,
  limits: { maxOfflineIntervalMs: number; maxWarmingUpIntervalMs: number },
): HeartbeatVerdict {
  if (ok) return 'available';
  if (state.availability === 'OFFLINE') return 'unchanged';
  if (state.availability === 'WARMING_UP') {
    return state.warmingSince !== null && roundEndedAt - state.warmingSince >= limits.maxWarmingUpIntervalMs ? 'offline' : 'unchanged';
  }
  if (state.lastOkAt === null) return 'offline';
  return roundEndedAt - state.lastOkAt >= limits.maxOfflineIntervalMs ? 'offline' : 'unchanged';
}

export interface HeartbeaterConfig {
  clock: Clock;
  intervalMs: number;
  /** Every registered node, the offline ones too (neon:H1). */
  nodeIds(): string[];
  /** One node's heartbeat with its retries; resolves true when it answered. */
  probe(nodeId: string): Promise<boolean>;
  /** The round's results, all at once when its slowest probe ended; `first`: the first round of this replica's leadership. */
  onRound(results: Map<string, { ok: boolean; sentAt: number }>, endedAt: number, first: boolean): Promise<void>;
  onError(error: unknown): void;
  /** ha:L8: whether this replica leads; a stand-by sends no heartbeats. Absent: always. */
  mayAct?: () => boolean;
  /** ha:L8: called before the first round this replica runs as leader (it takes the previous leader's state over). */
  onLead?: () => Promise<void>;
  /** ha:L8, ha:R1: called instead of a round while this replica stands by (it follows what the leader persisted). */
  onStandby?: () => Promise<void>;
}

/**
 * neon:H1: a round every `intervalMs` asks every node at once; rounds never overlap, so a
 * slow round (a dead node costs about 6.3 s with the retries) delays the next.
 */
export class Heartbeater {
  private cancel: (() => void) | undefined;
  private stopped = false;
  private running: Promise<void> = Promise.resolve();
  private leading = false;
  private inRound = false;

  constructor(private readonly config: HeartbeaterConfig) {}

  /** Runs a round now and schedules the next ones; resolves when this first round ended. */
  start(): Promise<void> {
    return this.round();
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.cancel?.();
    return this.running;
  }

  /**
   * ha:L8, neon:H4: a round at once, the next ones following from it, unless one is under way
   * or this replica already ran one as leader.
   * A replica that begins to lead calls it, as Neon's controller runs its initial heartbeat
   * round at start-up: its nodes read OFFLINE until a round has reached them, and waiting for
   * the next tick (up to `intervalMs`) would refuse drains for that long.
   */
  now(): void {
    if (this.stopped || this.inRound || this.leading) return;
    this.cancel?.();
    void this.round();
  }

  private round(): Promise<void> {
    const { clock } = this.config;
    const startedAt = clock.now();
    this.inRound = true;
    this.running = (async () => {
      // ha:L8: heartbeats only on the leader; the first round as leader starts from what the previous one persisted.
      const leads = this.config.mayAct?.() ?? true;
      const tookOver = leads && !this.leading;
      this.leading = leads;
      if (!leads) return this.config.onStandby?.().catch((e: unknown) => this.config.onError(e));
      if (tookOver) await this.config.onLead?.().catch((e: unknown) => this.config.onError(e));
      const ids = this.config.nodeIds();
      const results = new Map<string, { ok: boolean; sentAt: number }>();
      await Promise.all(
        ids.map(async (id) => {
          const ok = await this.config.probe(id).catch(() => false);
          results.set(id, { ok, sentAt: startedAt });
        }),
      );
      if (this.stopped || !(this.config.mayAct?.() ?? true)) return;
      await this.config.onRound(results, clock.now(), tookOver).catch((e: unknown) => this.config.onError(e));
    })();
    return this.running.finally(() => {
      this.inRound = false;
      if (this.stopped) return;
      const wait = Math.max(0, startedAt + this.config.intervalMs - clock.now());
      this.cancel = clock.setTimer(wait, () => void this.round());
    });
  }
}
