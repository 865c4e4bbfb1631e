/** The simulator's time: one definition for every simulator (simulators/common/clock.ts). */
export { type SimClock, wallClock } from '../common/clock.ts';
