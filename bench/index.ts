import type { Benchmark } from './benchmark.ts';
import { readPath } from './read-path.ts';

/** Every benchmark `npm run bench` runs, in order. Register new ones here. */
export const benchmarks: readonly Benchmark[] = [readPath];
