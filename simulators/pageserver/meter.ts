/**
 * `PUT …/location_config` requests in flight across the simulators that share it, from
 * their arrival to their answer (or the connection's end): the concurrency a controller
 * really applies, measured where it lands rather than taken from its configuration.
 */
export class LocationConfigMeter {
  inFlight = 0;
  /** The most in flight at once since the last `reset`. */
  highWater = 0;
  /** Called as each one is answered 2xx: the shard, the node, the mode it set, and the simulator's clock. */
  onAnswered: ((shardId: string, nodeId: number, mode: string, at: number) => void) | undefined;
  /** Time-weighted count since the last `reset` (wall clock, `performance.now()`): in flight × ms, and when it last changed. */
  private area = 0;
  private since = performance.now();
  private changedAt = this.since;

  arrived(): void {
    this.step(1);
    if (this.inFlight > this.highWater) this.highWater = this.inFlight;
  }

  left(): void {
    this.step(-1);
  }

  reset(): void {
    this.highWater = this.inFlight;
    this.area = 0;
    this.since = this.changedAt = performance.now();
  }

  /** The mean in flight over the wall-clock time since the last `reset` (or from it to `until`). */
  mean(until = performance.now()): number {
    const span = until - this.since;
    return span > 0 ? (this.area + this.inFlight * (until - this.changedAt)) / span : this.inFlight;
  }

  private step(by: number): void {
    const now = performance.now();
    this.area += this.inFlight * (now - this.changedAt);
    this.changedAt = now;
    this.inFlight += by;
  }
}
