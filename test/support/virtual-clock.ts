export { flushMicrotasks, VirtualClock } from '../../src/cluster/virtual-clock.ts';
