/**
 * Launching a server as a user does (`npm start`, or any command) in a child process, and
 * waiting for its first answered GraphQL query: the start-up benchmark, the memory
 * benchmark and the CI check of the compiled build (scripts/check-compiled-start.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const PROJECT_DIR = fileURLToPath(new URL('..', import.meta.url));

interface LaunchOptions {
  command: string;
  args: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** Sent until it answers with `data` and no `errors`. */
  query: string;
  /** Give up after this long (default 120 s: a loaded two-core machine). */
  timeoutMs?: number;
  /** Sent with every query (an image's gateway listens beyond loopback: its admin token). */
  headers?: Record<string, string>;
  /** false: `env` (and the port) is the whole environment, nothing of this process's (an image's gateway). */
  inheritEnv?: boolean;
}

export interface Launched {
  url: string;
  /** From spawn to the first answer with data. */
  msToFirstAnswer: number;
  /** The first answer's `data`. */
  data: unknown;
  child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** Sends the signal to the launched process (npm itself under `npm start`) and waits for it to exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A free loopback port: the server is told it, so the client can ask before any log line. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Whether anything still accepts connections on the port (a gateway orphaned by its npm). */
export async function answers(url: string): Promise<boolean> {
  try {
    await fetch(url, { method: 'GET', signal: AbortSignal.timeout(2000) });
    return true;
  } catch {
    return false;
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function launch(options: LaunchOptions): Promise<Launched> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/graphql`;
  let output = '';
  const started = performance.now();
  const child = spawn(options.command, options.args, {
    cwd: options.cwd ?? PROJECT_DIR,
    env:
      options.inheritEnv === false
        ? { LOCKKEEPER_HOST: '127.0.0.1', ...options.env, LOCKKEEPER_PORT: String(port) }
        : { ...process.env, LOCKKEEPER_LOG_LEVEL: 'info', ...options.env, LOCKKEEPER_PORT: String(port), LOCKKEEPER_HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let gone = false;
  void exited.then(() => (gone = true));

  const deadline = started + (options.timeoutMs ?? 120_000);
  const body = JSON.stringify({ query: options.query });
  for (;;) {
    if (gone) throw new Error(`${options.command} ${options.args.join(' ')} exited before answering:\n${output}`);
    if (performance.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${options.command} ${options.args.join(' ')} did not answer within ${options.timeoutMs ?? 120_000} ms:\n${output}`);
    }
    try {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...options.headers }, body });
      const json = (await res.json()) as { data?: unknown; errors?: unknown };
      if (res.ok && json.data && !json.errors) {
        const msToFirstAnswer = performance.now() - started;
        return {
          url,
          msToFirstAnswer,
          data: json.data,
          child,
          output: () => output,
          stop: async (signal = 'SIGTERM') => {
            if (!gone) child.kill(signal);
            return exited;
          },
        };
      }
      throw new Error(`answered ${res.status}: ${JSON.stringify(json).slice(0, 300)}`);
    } catch (e) {
      // Not listening yet (connection refused): ask again shortly.
      if (!(e instanceof TypeError)) throw e;
      await pause(10);
    }
  }
}

/** `npm start` in `cwd` (the project by default): the README's way to run the gateway. */
export const npmStart = (query: string, env: Record<string, string>, cwd?: string) =>
  launch({ command: 'npm', args: ['start', '--silent'], query, env, ...(cwd && { cwd }) });

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Launches a demo-cluster gateway, checks its first answer, stops it with SIGTERM: the time to that answer. */
export async function timeOnce(start: () => Promise<Launched>): Promise<number> {
  const server = await start();
  if ((server.data as { nodes?: { totalCount?: number } }).nodes?.totalCount !== 4) throw new Error(`unexpected answer ${JSON.stringify(server.data)}`);
  const exit = await server.stop('SIGTERM');
  if (exit.code !== 0) throw new Error(`exited with ${exit.code ?? exit.signal} after SIGTERM:\n${server.output()}`);
  return server.msToFirstAnswer;
}
