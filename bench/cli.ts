/**
 * The CLI's response time (issue 30, point 2): `lockkeeper --help`, and a query verb
 * (`lockkeeper nodes`) against a running gateway, each against a bare `node -e 0` measured in
 * the same rounds (alternating, so machine load hits all three alike). The goals are on the
 * difference: at most 0.3 s over a bare node for `--help`, 0.5 s for `nodes`.
 */
import { spawnSync, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Benchmark, BenchReport } from './benchmark.ts';
import { npmStart, PROJECT_DIR } from './launch.ts';

const RUNS = 15;
const HELP_GOAL_MS = 300;
const QUERY_GOAL_MS = 500;
const BIN = join(PROJECT_DIR, 'bin', 'lockkeeper.js');

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Wall time of one process, from spawn to exit; it must exit 0. */
function timed(args: string[]): number {
  const started = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: PROJECT_DIR, stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = performance.now() - started;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr.toString()}`);
  return ms;
}

export const cli: Benchmark = {
  name: 'cli',
  title: `CLI response: \`lockkeeper --help\` and \`lockkeeper nodes\` against a running gateway, over a bare \`node -e 0\` (medians of ${RUNS}, alternating)`,
  async run(_options, progress): Promise<BenchReport> {
    // As after `npm install`: dist/ is built, so bin/lockkeeper.js only checks that it is current.
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: PROJECT_DIR, stdio: 'ignore' });
    const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-cli-bench-'));
    const gateway = await npmStart('{ nodes { totalCount } }', { LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lockkeeper.db')}`, LOCKKEEPER_LOG_LEVEL: 'warn' });
    try {
      const bare: number[] = [];
      const help: number[] = [];
      const nodes: number[] = [];
      // One of each first, not counted: the page cache and the gateway's first-query compilation.
      timed(['-e', '0']);
      timed([BIN, '--help']);
      timed([BIN, 'nodes', '--server', gateway.url]);
      for (let i = 0; i < RUNS; i++) {
        bare.push(timed(['-e', '0']));
        help.push(timed([BIN, '--help']));
        nodes.push(timed([BIN, 'nodes', '--server', gateway.url]));
        progress(`  run ${i + 1}: node -e 0 ${bare[i]!.toFixed(0)} ms, --help ${help[i]!.toFixed(0)} ms, nodes ${nodes[i]!.toFixed(0)} ms`);
      }
      const [b, h, n] = [median(bare), median(help), median(nodes)];
      const verdict = (over: number, goal: number) =>
        over <= goal ? `meets the goal of ≤ ${goal} ms over bare node` : `**misses the goal of ≤ ${goal} ms over bare node**`;
      return {
        summary: `cli: node -e 0 ${b.toFixed(0)} ms; --help ${h.toFixed(0)} ms (+${(h - b).toFixed(0)}, ${verdict(h - b, HELP_GOAL_MS)}); nodes ${n.toFixed(0)} ms (+${(n - b).toFixed(0)}, ${verdict(n - b, QUERY_GOAL_MS)})`,
        markdown: [
          'Each run spawns the process and waits for its exit (`spawnSync`, wall time). `bin/lockkeeper.js` as installed (it checks dist/ is current, then runs the compiled CLI); the gateway is `npm start` over the demo cluster (SQLite, log level warn) on loopback, started once. Measured in the same run as `startup` (`npm run bench -- startup cli`); compare the two sections at the same load.',
          '',
          '| run | `node -e 0` ms | `lockkeeper --help` ms | `lockkeeper nodes` ms |',
          '|---:|---:|---:|---:|',
          ...bare.map((x, i) => `| ${i + 1} | ${x.toFixed(0)} | ${help[i]!.toFixed(0)} | ${nodes[i]!.toFixed(0)} |`),
          '',
          `**Medians: \`node -e 0\` ${b.toFixed(0)} ms; \`--help\` ${h.toFixed(0)} ms, ${(h - b).toFixed(0)} ms over (${verdict(h - b, HELP_GOAL_MS)}); \`nodes\` ${n.toFixed(0)} ms, ${(n - b).toFixed(0)} ms over (${verdict(n - b, QUERY_GOAL_MS)}).**`,
        ].join('\n'),
      };
    } finally {
      await gateway.stop('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
