/** What every benchmark in `bench/` provides; `bench/index.ts` lists them for `bench/run.ts`. */
export interface Benchmark {
  /** Selects it on the command line (`npm run bench -- <name>`) and names its section of RESULTS.md. */
  name: string;
  /** One line: the figure it measures. */
  title: string;
  run(options: BenchOptions, progress: (line: string) => void): Promise<BenchReport>;
}

export interface BenchOptions {
  /** Measured time per target per round. */
  durationMs: number;
  /** Unmeasured load before each measured run. */
  warmupMs: number;
  /** Targets are measured alternately this many times each. */
  rounds: number;
  /** Concurrent keep-alive clients. */
  concurrency: number;
}

export const defaultBenchOptions: BenchOptions = { durationMs: 10_000, warmupMs: 2_000, rounds: 2, concurrency: 8 };

export interface BenchReport {
  /** Markdown for the benchmark's section of RESULTS.md, below the machine and command lines. */
  markdown: string;
  /** One line for the console. */
  summary: string;
}
