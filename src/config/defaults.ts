import { configSchema, type LockkeeperConfig } from './schema.ts';

/** Every setting at its default, for code that runs without a config (usage text, tests, benchmarks). */
export const DEFAULT_CONFIG: LockkeeperConfig = configSchema.parse({});
