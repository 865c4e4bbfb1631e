import type { Logger } from '../logger.ts';
import type { Repositories } from '../store/repositories.ts';

/** How often a stand-by reloads what its reads answer from memory. */
const REFRESH_MS = 1000;

/**
 * A stand-by answers reads (ha:R1): the node policies and maintenance phases that the API
 * reads from the repositories' caches are reloaded from the database while it stands by, as
 * the leader changes them.
 */
export class StandbyReads {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: Pick<Repositories, 'policies' | 'maintenanceStates'>,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    await this.refresh();
    this.stop();
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async refresh(): Promise<void> {
    try {
      await Promise.all([this.store.policies.load(), this.store.maintenanceStates.load()]);
    } catch (e) {
      this.log.debug({ err: e }, 'stand-by: reloading policies and phases failed');
    }
  }
}
