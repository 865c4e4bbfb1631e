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

  arrived(): void {
    this.inFlight++;
    if (this.inFlight > this.highWater) this.highWater = this.inFlight;
  }

  left(): void {
    this.inFlight--;
  }

  reset(): void {
    this.highWater = this.inFlight;
  }
}
