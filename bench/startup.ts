/**
 * Start-up (issue 15 point 3): from launching `npm start` (scripts/start.mjs: its staleness check,
 * then the compiled gateway on plain node, in one process) to the first answered GraphQL query, on an existing
 * database; and the same for a bare graphql-yoga server started the same way
 * (`npm run bench:bare-yoga`, plain node), alternating. The ratio is what Lockkeeper's start
 * costs on top of starting yoga itself. On a shared machine the best of the runs after a
 * warm-up of each is the figure (issue 29), with the load average beside every run; the
 * median is shown too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import type { Benchmark, BenchReport } from './benchmark.ts';
import { launch, median, npmStart, PROJECT_DIR, timeOnce } from './launch.ts';

const RUNS = 5;
const QUERY = '{ nodes { totalCount } }';
const GOAL_MS = 1500;
/** Issue 29 point 5 (issue 15 had 3). */
const GOAL_RATIO = 1.3;

export const startup: Benchmark = {
  name: 'startup',
  title: `Start-up: \`npm start\` launched to its first answered GraphQL query on an existing database (best of ${RUNS} after a warm-up), against a bare graphql-yoga started the same way`,
  async run(_options, progress): Promise<BenchReport> {
    // The build is made first (as npm install does): scripts/start.mjs then only checks it is current.
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: PROJECT_DIR, stdio: 'ignore' });
    const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-startup-'));
    const env = { LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lockkeeper.db')}`, LOCKKEEPER_LOG_LEVEL: 'warn' };
    try {
      const startBare = () => launch({ command: 'npm', args: ['run', 'bench:bare-yoga', '--silent'], query: QUERY });
      // Warm-up: the first start creates and migrates the database (the measured ones open it); both read their files into the page cache.
      await timeOnce(() => npmStart(QUERY, env));
      await timeOnce(startBare);
      const ours: number[] = [];
      const bare: number[] = [];
      const loads: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        // Which goes first alternates: neither always starts right after the other's exit.
        if (i % 2 === 0) {
          ours.push(await timeOnce(() => npmStart(QUERY, env)));
          bare.push(await timeOnce(startBare));
        } else {
          bare.push(await timeOnce(startBare));
          ours.push(await timeOnce(() => npmStart(QUERY, env)));
        }
        loads.push(loadavg()[0]!);
        progress(`  run ${i + 1}: npm start ${ours[i]!.toFixed(0)} ms, bare yoga ${bare[i]!.toFixed(0)} ms (load ${loads[i]!.toFixed(2)})`);
      }
      const m = Math.min(...ours);
      const b = Math.min(...bare);
      const ratio = m / b;
      const verdict =
        m <= GOAL_MS && ratio <= GOAL_RATIO
          ? `meets the goals of ≤ ${GOAL_MS} ms and ratio ≤ ${GOAL_RATIO}`
          : `**misses the goals of ≤ ${GOAL_MS} ms and ratio ≤ ${GOAL_RATIO}**`;
      return {
        summary: `startup: best ${m.toFixed(0)} ms, bare yoga ${b.toFixed(0)} ms, ratio ${ratio.toFixed(2)} (${verdict}); medians ${median(ours).toFixed(0)} / ${median(bare).toFixed(0)} ms`,
        markdown: [
          'Each run launches the server as a user does and polls it with a POST of `' +
            QUERY +
            '` every 10 ms from the launch (`bench/launch.ts`); the time is to the first answer with data. The demo cluster, SQLite, default config, log level warn. ' +
            'One unmeasured start of each first (warm-up), then runs alternate between the two servers (which starts first alternates too).',
          '',
          '| run | `npm start` ms | bare graphql-yoga ms | load (1 min) |',
          '|---:|---:|---:|---:|',
          ...ours.map((o, i) => `| ${i + 1} | ${o.toFixed(0)} | ${bare[i]!.toFixed(0)} | ${loads[i]!.toFixed(2)} |`),
          '',
          `**Best: ${m.toFixed(0)} ms; bare graphql-yoga ${b.toFixed(0)} ms; ratio ${ratio.toFixed(2)}** (${verdict}). Medians: ${median(ours).toFixed(0)} ms and ${median(bare).toFixed(0)} ms, ratio ${(median(ours) / median(bare)).toFixed(2)}.`,
        ].join('\n'),
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
