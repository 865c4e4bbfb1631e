import type { Benchmark } from './benchmark.ts';
import { cli } from './cli.ts';
import { drain0 } from './drain-0.ts';
import { drain10k } from './drain-10k.ts';
import { drain10kPostgresql } from './drain-10k-postgresql.ts';
import { failover20k } from './failover-20k.ts';
import { failover20kPageserver } from './failover-20k-pageserver.ts';
import { fanout } from './fanout.ts';
import { image } from './image.ts';
import { maintenance500 } from './maintenance-500.ts';
import { memory } from './memory.ts';
import { readPath } from './read-path.ts';
import { rehearsal } from './rehearsal.ts';
import { rehearsalScale } from './rehearsal-scale.ts';
import { startup } from './startup.ts';
import { takeover } from './takeover.ts';

/** Every benchmark `npm run bench` runs, in order. Register new ones here. (image last: it needs root and podman.) */
export const benchmarks: readonly Benchmark[] = [
  readPath,
  startup,
  cli,
  memory,
  drain0,
  drain10k,
  failover20k,
  failover20kPageserver,
  fanout,
  maintenance500,
  drain10kPostgresql,
  takeover,
  rehearsal,
  rehearsalScale,
  image,
];
