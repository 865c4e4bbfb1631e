/**
 * Memory (issue 15 point 4): resident set size of the compiled gateway (plain node on
 * dist/, as `npm start` runs it) right after start-up and after 10 000 reads, for the demo
 * cluster and for a simulated cluster of 100 000 shards and 10 000 VMs — the fake plugin's
 * `topology: { generate }` option, so the large cluster is a config file, not code.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Benchmark, BenchReport } from './benchmark.ts';
import { launch, PROJECT_DIR } from './launch.ts';

const READS = 10_000;
const CONCURRENCY = 8;
/** Time given to start-up work (the first heartbeats, timers) before and after the reads. */
const SETTLE_MS = 3000;
const MIB = 1024 ** 2;

interface Case {
  label: string;
  /** The fake plugin's options; none = no config file (the demo). */
  fakeOptions?: object;
  goalMiB: number;
  read: string;
}

const CASES: Case[] = [
  {
    label: 'demo cluster (4 nodes, 24 VMs, 40 shards)',
    goalMiB: 150,
    read: '{ nodes { totalCount } vms(first: 24) { edges { node { name node { name } } } } shards(first: 40) { totalCount } }',
  },
  {
    label: 'generated: 100 nodes, 10 000 VMs, 100 000 shards',
    fakeOptions: { topology: { generate: { nodes: 100, zones: 3, vmsPerNode: 100, tenants: 12_500, shardsPerTenant: 8 } } },
    goalMiB: 400,
    read: '{ nodes(first: 100) { totalCount } vms(first: 50) { totalCount edges { node { name node { name } } } } shards(first: 50) { totalCount } }',
  },
];

/**
 * The node flags `npm start` gives the gateway (package.json `scripts.start`), so that this
 * measures what users run while reading the gateway's own pid (under npm, it would be npm's).
 */
function startFlags(): string[] {
  const start = (JSON.parse(readFileSync(join(PROJECT_DIR, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const m = /^exec node ((?:--\S+ )*)dist\/src\/cli\.js serve$/.exec(start);
  if (!m) throw new Error(`package.json scripts.start is not \`exec node [--flags] dist/src/cli.js serve\`: ${start}`);
  return m[1]!.split(' ').filter(Boolean);
}

function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  if (!line) throw new Error(`no VmRSS for ${pid}`);
  return Number(/(\d+)/.exec(line)![1]) * 1024;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function reads(url: string, query: string): Promise<void> {
  const body = JSON.stringify({ query });
  let left = READS;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        const json = (await res.json()) as { errors?: unknown };
        if (!res.ok || json.errors) throw new Error(`read failed: ${res.status} ${JSON.stringify(json).slice(0, 200)}`);
      }
    }),
  );
}

async function measure(c: Case, dir: string): Promise<{ afterStart: number; afterReads: number; startMs: number }> {
  const env: Record<string, string> = { LOCKKEEPER_DATABASE_URL: `file:${join(dir, `${c.goalMiB}.db`)}`, LOCKKEEPER_LOG_LEVEL: 'warn' };
  if (c.fakeOptions) {
    const config = join(dir, `${c.goalMiB}.json`);
    writeFileSync(config, JSON.stringify({ plugins: [{ name: 'fake', options: c.fakeOptions }] }));
    env.LOCKKEEPER_CONFIG = config;
  }
  const server = await launch({ command: process.execPath, args: [...startFlags(), 'dist/src/cli.js', 'serve'], query: c.read, env });
  try {
    await pause(SETTLE_MS);
    const afterStart = rssOf(server.child.pid!);
    await reads(server.url, c.read);
    await pause(SETTLE_MS);
    return { afterStart, afterReads: rssOf(server.child.pid!), startMs: server.msToFirstAnswer };
  } finally {
    await server.stop('SIGTERM');
  }
}

export const memory: Benchmark = {
  name: 'memory',
  title: `Memory: RSS of the compiled gateway after start-up and after ${READS.toLocaleString('en')} reads, demo cluster and 100 000 shards + 10 000 VMs`,
  async run(_options, progress): Promise<BenchReport> {
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: PROJECT_DIR, stdio: 'ignore' });
    const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-memory-'));
    const rows: string[] = [];
    const verdicts: string[] = [];
    try {
      for (const c of CASES) {
        const m = await measure(c, dir);
        const growth = m.afterReads / m.afterStart - 1;
        const ok = m.afterStart <= c.goalMiB * MIB && growth <= 0.1;
        verdicts.push(`${c.label}: ${ok ? 'meets' : '**misses**'} ≤ ${c.goalMiB} MiB and ≤ 10 % growth`);
        rows.push(
          `| ${c.label} | ${(m.afterStart / MIB).toFixed(0)} | ${(m.afterReads / MIB).toFixed(0)} | ${(growth * 100).toFixed(1)} % | ${c.goalMiB} | ${(m.startMs / 1000).toFixed(1)} s |`,
        );
        progress(`  ${c.label}: ${(m.afterStart / MIB).toFixed(0)} MiB after start, ${(m.afterReads / MIB).toFixed(0)} MiB after the reads`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return {
      summary: `memory: ${verdicts.join('; ')}`,
      markdown: [
        `\`${['node', ...startFlags(), 'dist/src/cli.js', 'serve'].join(' ')}\` (what \`npm start\` execs), SQLite, log level warn; RSS from \`/proc/<pid>/status\` ${SETTLE_MS / 1000} s after the first answered query, then again ${SETTLE_MS / 1000} s after ${READS.toLocaleString('en')} reads of the query below (${CONCURRENCY} concurrent clients). The large cluster's config: \`${JSON.stringify(CASES[1]!.fakeOptions)}\`.`,
        '',
        '| cluster | RSS after start MiB | RSS after reads MiB | growth | goal MiB | start to first answer |',
        '|---|---:|---:|---:|---:|---:|',
        ...rows,
        '',
        ...CASES.map((c) => `- Read (${c.label}): \`${c.read}\``),
        '',
        verdicts.map((v) => `**${v.replace(/\*\*/g, '')}**`).join('; ') + '.',
      ].join('\n'),
    };
  },
};
