/**
 * Start-up (issue 15 point 3): from launching `npm start` (scripts/start.mjs: its staleness check,
 * then the compiled gateway on plain node, in one process) to the first answered GraphQL query, on an existing
 * database, median of 5; and the same for a bare graphql-yoga server started the same way
 * (`npm run bench:bare-yoga`, plain node). The ratio is what Lockkeeper's start costs on
 * top of starting yoga itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import type { Benchmark, BenchReport } from './benchmark.ts';
import { launch, median, npmStart, PROJECT_DIR, timeOnce } from './launch.ts';

const RUNS = 5;
const QUERY = '{ nodes { totalCount } }';
const GOAL_MS = 1500;
const GOAL_RATIO = 3;

export const startup: Benchmark = {
  name: 'startup',
  title: `Start-up: \`npm start\` launched to its first answered GraphQL query on an existing database (median of ${RUNS}), against a bare graphql-yoga started the same way`,
  async run(_options, progress): Promise<BenchReport> {
    // The build is made first (as npm install does): scripts/start.mjs then only checks it is current.
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: PROJECT_DIR, stdio: 'ignore' });
    const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-startup-'));
    const env = { LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lockkeeper.db')}`, LOCKKEEPER_LOG_LEVEL: 'warn' };
    try {
      // The first start creates and migrates the database; the measured ones open it.
      await timeOnce(() => npmStart(QUERY, env));
      const ours: number[] = [];
      const bare: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        ours.push(await timeOnce(() => npmStart(QUERY, env)));
        bare.push(await timeOnce(() => launch({ command: 'npm', args: ['run', 'bench:bare-yoga', '--silent'], query: QUERY })));
        progress(`  run ${i + 1}: npm start ${ours[i]!.toFixed(0)} ms, bare yoga ${bare[i]!.toFixed(0)} ms`);
      }
      const m = median(ours);
      const ratio = m / median(bare);
      const verdict =
        m <= GOAL_MS && ratio <= GOAL_RATIO
          ? `meets the goals of ≤ ${GOAL_MS} ms and ratio ≤ ${GOAL_RATIO}`
          : `**misses the goals of ≤ ${GOAL_MS} ms and ratio ≤ ${GOAL_RATIO}**`;
      return {
        summary: `startup: median ${m.toFixed(0)} ms, bare yoga ${median(bare).toFixed(0)} ms, ratio ${ratio.toFixed(2)} (${verdict})`,
        markdown: [
          'Each run launches the server as a user does and polls it with a POST of `' +
            QUERY +
            '` every 10 ms from the launch (`bench/launch.ts`); the time is to the first answer with data. The demo cluster, SQLite, default config, log level warn. Runs alternate between the two servers.',
          '',
          '| run | `npm start` ms | bare graphql-yoga ms |',
          '|---:|---:|---:|',
          ...ours.map((o, i) => `| ${i + 1} | ${o.toFixed(0)} | ${bare[i]!.toFixed(0)} |`),
          '',
          `**Median: ${m.toFixed(0)} ms; bare graphql-yoga ${median(bare).toFixed(0)} ms; ratio ${ratio.toFixed(2)}** (${verdict}).`,
        ].join('\n'),
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
