/**
 * `npm run bench` runs every benchmark in `bench/index.ts`; `npm run bench -- read-path`
 * runs the named ones. Options: `--duration <s>`, `--warmup <s>`, `--rounds <n>`,
 * `--concurrency <n>`. Each benchmark rewrites only its own section of bench/RESULTS.md
 * (machine, date, command, figures). Benchmarks are never timed tests: nothing fails on
 * a figure, only on wrong answers.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defaultBenchOptions, type BenchOptions } from './benchmark.ts';
import { benchmarks } from './index.ts';

const RESULTS = fileURLToPath(new URL('./RESULTS.md', import.meta.url));
const HEADER = `# Benchmark results

Written by \`npm run bench\` (\`bench/run.ts\`): each benchmark rewrites its own section
between its markers and leaves the others alone. Figures depend on the machine; compare
figures measured in the same run.
`;

function parseArgs(argv: string[]): { names: string[]; options: BenchOptions } {
  const options = { ...defaultBenchOptions };
  const names: string[] = [];
  const numeric: Record<string, (v: number) => void> = {
    duration: (v) => (options.durationMs = v * 1000),
    warmup: (v) => (options.warmupMs = v * 1000),
    rounds: (v) => (options.rounds = v),
    concurrency: (v) => (options.concurrency = v),
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      names.push(arg);
      continue;
    }
    const [key, inline] = arg.slice(2).split('=', 2) as [string, string | undefined];
    const set = numeric[key];
    const value = Number(inline ?? argv[++i]);
    if (!set || !Number.isFinite(value) || value <= 0)
      throw new Error(
        `unknown option or bad value: ${arg} (options: ${Object.keys(numeric)
          .map((k) => `--${k}`)
          .join(', ')})`,
      );
    set(value);
  }
  return { names, options };
}

function machine(): string {
  const list = cpus();
  const model = list[0]?.model.trim() ?? 'unknown CPU';
  return `${model}, ${list.length} cores, ${(totalmem() / 1024 ** 3).toFixed(1)} GiB memory, Node ${process.version} (${process.platform}/${process.arch})`;
}

function command(name: string, options: BenchOptions, all: boolean): string {
  const extra = Object.entries({
    duration: [options.durationMs / 1000, defaultBenchOptions.durationMs / 1000],
    warmup: [options.warmupMs / 1000, defaultBenchOptions.warmupMs / 1000],
    rounds: [options.rounds, defaultBenchOptions.rounds],
    concurrency: [options.concurrency, defaultBenchOptions.concurrency],
  })
    .filter(([, [v, d]]) => v !== d)
    .map(([k, [v]]) => ` --${k} ${v}`)
    .join('');
  const ran = all && !extra ? '`npm run bench`' : `\`npm run bench -- ${name}${extra}\``;
  return `${ran} (all benchmarks: \`npm run bench\`; just this one: \`npm run bench -- ${name}\`)`;
}

/** Replaces (or appends) the section between the benchmark's markers. */
function writeSection(name: string, section: string): void {
  const begin = `<!-- bench:${name}:begin -->`;
  const end = `<!-- bench:${name}:end -->`;
  const block = `${begin}\n${section.trim()}\n${end}`;
  let text = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : HEADER;
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from >= 0 && to > from) text = text.slice(0, from) + block + text.slice(to + end.length);
  else text = `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(RESULTS, text);
}

async function main(): Promise<void> {
  const { names, options } = parseArgs(process.argv.slice(2));
  const unknown = names.filter((n) => !benchmarks.some((b) => b.name === n));
  if (unknown.length) throw new Error(`unknown benchmark ${unknown.join(', ')}; known: ${benchmarks.map((b) => b.name).join(', ')}`);
  const selected = names.length ? benchmarks.filter((b) => names.includes(b.name)) : benchmarks;
  for (const bench of selected) {
    console.log(`${bench.name}: ${bench.title}`);
    const date = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    // The machine is shared (other sessions' work): the load says how far the figures can be trusted.
    const load = () =>
      loadavg()
        .map((l) => l.toFixed(2))
        .join(' ');
    const loadBefore = load();
    const report = await bench.run(options, (line) => console.log(line));
    writeSection(
      bench.name,
      [
        `## ${bench.name}`,
        '',
        bench.title + '.',
        '',
        `- Machine: ${machine()}`,
        `- Date: ${date}`,
        `- Command: ${command(bench.name, options, names.length === 0)}`,
        `- Load average (1, 5, 15 min): ${loadBefore} at the start, ${load()} at the end`,
        '',
        report.markdown,
      ].join('\n'),
    );
    console.log(report.summary);
  }
  console.log(`wrote ${RESULTS}`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exitCode = 1;
});
