import type { VirtualClock } from './virtual-clock.ts';

/**
 * Moves a VirtualClock that the simulator, the plugin and the engine share, in steps, and
 * lets real I/O (HTTP to the simulator, watch events) happen between steps, until `until`
 * holds. Time only moves here, so "5 s apart" and "after 180 s" are exact lower bounds;
 * tests assert on what happened, never on how long it took in real time.
 */
export async function drive(
  clock: VirtualClock,
  until: () => boolean | Promise<boolean>,
  { stepMs = 250, maxMs = 3_600_000, realMs = 5 }: { stepMs?: number; maxMs?: number; realMs?: number } = {},
): Promise<void> {
  for (let elapsed = 0; ; elapsed += stepMs) {
    if (await until()) return;
    if (elapsed > maxMs) throw new Error(`condition not reached within ${maxMs} ms of virtual time`);
    await clock.advance(stepMs);
    await new Promise((resolve) => setTimeout(resolve, realMs));
  }
}
