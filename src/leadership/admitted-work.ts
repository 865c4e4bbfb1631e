/** How often the leader looks for admitted work without a wake-up (a lost NOTIFY, a listener reconnecting): ha:R2's one second. */
const POLL_MS = 1000;

/**
 * The leader's side of admission by the database (ha:R2, ha:R4): other replicas admit
 * operations and record cancels and policies; their commit's NOTIFY wakes this replica,
 * which adopts them (OperationCoordinator.adopt), with a poll as fallback. Wake-ups that
 * come while an adoption runs are folded into one more pass.
 */
export class AdmittedWork {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly adopt: () => Promise<void>,
    private readonly onError: (e: unknown) => void,
  ) {}

  /** This replica leads: poll, and hear wake-ups. */
  start(): void {
    this.stop();
    this.timer = setInterval(() => this.wake(), POLL_MS);
    this.timer.unref();
    this.wake();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Another replica admitted something (NOTIFY): look now. Ignored while this replica does not lead. */
  wake(): void {
    if (!this.timer) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.adopt()
      .catch(this.onError)
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** The pass in flight, if any (shutdown waits for it). */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }
}
