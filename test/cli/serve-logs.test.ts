import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/child-server.ts';

/**
 * Issue 30, point 5, through the real binary: `lockkeeper serve` logs readable, coloured
 * lines on a terminal and JSON lines otherwise; its start-up line names the dashboard's URL;
 * `--demo-slowdown N` (or LOCKKEEPER_DEMO_SLOWDOWN) multiplies the demo's latencies.
 */

const BIN = join(PROJECT_ROOT, 'bin/lockkeeper.js');
const running: { child: ChildProcess; dir: string }[] = [];

afterEach(() => {
  for (const { child, dir } of running.splice(0)) {
    if (child.pid) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Starts `lockkeeper serve` in a fresh directory (the demo), optionally under a pseudo-terminal; resolves once it logged that it listens. */
async function serve(options: { tty: boolean; args?: string[]; env?: Record<string, string> }) {
  const dir = mkdtempSync(join(tmpdir(), 'lk-serve-logs-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, LOCKKEEPER_PORT: String(port), LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lk.db')}`, ...options.env };
  delete env.LOCKKEEPER_LOG_FORMAT;
  delete env.LOCKKEEPER_LOG_LEVEL;
  const argv = [process.execPath, BIN, 'serve', ...(options.args ?? [])];
  const child = options.tty
    ? spawn('script', ['-qec', argv.map((a) => `'${a}'`).join(' '), '/dev/null'], { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(argv[0]!, argv.slice(1), { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.push({ child, dir });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Lockkeeper listening')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}:\n${out}`)));
  });
  return { out, url: `http://127.0.0.1:${port}/graphql`, port };
}

describe('lockkeeper serve: logs for people and machines (issue 30, point 5)', () => {
  it(
    'on a terminal: coloured, readable lines, the start-up line naming the dashboard; --demo-slowdown 10 slows every latency tenfold',
    { timeout: 120_000 },
    async () => {
      const { out, url, port } = await serve({ tty: true, args: ['--demo-slowdown', '10'] });
      expect(out).toContain('\u001b[32mINFO\u001b[39m');
      expect(out).not.toMatch(/^\{"level"/m);
      expect(out).toContain(`Lockkeeper listening: dashboard at http://127.0.0.1:${port}/, GraphiQL at http://127.0.0.1:${port}/graphql`);
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ simulation { latencies { migrate stop start cutOver cordon } } }' }),
      });
      expect((await res.json()).data.simulation.latencies).toEqual({ migrate: 8000, stop: 4000, start: 5000, cutOver: 3000, cordon: 500 });
    },
  );

  it(
    'without a terminal: one JSON object per line, the dashboard among the start-up line’s fields; LOCKKEEPER_DEMO_SLOWDOWN is read',
    { timeout: 120_000 },
    async () => {
      const { out, port } = await serve({ tty: false, env: { LOCKKEEPER_DEMO_SLOWDOWN: '2' } });
      const lines = out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.find((l) => l.slowdown !== undefined)).toMatchObject({ slowdown: 2 });
      expect(lines.at(-1)).toMatchObject({
        msg: `Lockkeeper listening: dashboard at http://127.0.0.1:${port}/, GraphiQL at http://127.0.0.1:${port}/graphql`,
        dashboard: `http://127.0.0.1:${port}/`,
      });
    },
  );
});
