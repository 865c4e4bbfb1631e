import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/**
 * The gateway's TypeScript source, run through tsx: these tests are about the gateway, and
 * some (lazy-loading) read which source modules it loads. bin/lockkeeper.js runs the compiled
 * build instead; test/cli/ tests that binary.
 */
export const SOURCE_CLI = [
  // tsx's loader by its URL: a bare `tsx` would be resolved from the child's cwd (a temp dir).
  '--import',
  new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href,
  fileURLToPath(new URL('../../src/cli.ts', import.meta.url)),
];

export interface ChildServer {
  child: ChildProcess;
  url: string;
  port: number;
  stderr: () => string;
  stdout: () => string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Runs `lockkeeper serve` as a separate process, as an operator would, and waits for its
 * "listening" log line (the port comes from it, since tests bind port 0).
 */
export function spawnLockkeeper(env: Record<string, string>, cwd: string, args = ['serve'], nodeArgs: string[] = []): ChildServer & { ready: Promise<void> } {
  const child = spawn(process.execPath, [...nodeArgs, ...SOURCE_CLI, ...args], {
    cwd,
    env: { ...process.env, LOCKKEEPER_PORT: '0', LOCKKEEPER_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const server = {
    child,
    url: '',
    port: 0,
    stderr: () => err,
    stdout: () => out,
    exited: new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  } as ChildServer & { ready: Promise<void> };
  server.ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (match && !server.url) {
        server.url = match[1]!;
        server.port = Number(new URL(server.url).port);
        resolve();
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    void server.exited.then(({ code }) => reject(new Error(`lockkeeper exited (${code}) before listening:\n${err}\n${out}`)));
  });
  return server;
}

/** POSTs a query to a real server and returns `data`; GraphQL errors throw. */
export async function postGraphQL(url: string, query: string): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  const body = (await res.json()) as { data?: unknown; errors?: unknown };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

/** Polls in real time (a child server, or replicas, run on the real clock) until `probe` returns a value; the probe may be synchronous. */
export async function until<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 240_000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
