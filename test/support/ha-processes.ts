/**
 * Real processes for high-availability tests and the take-over benchmark: `lockkeeper
 * simulator` (ha:B1) and `lockkeeper serve` replicas started with its config on one
 * PostgreSQL database. Every process started is kept in `children` for the caller to end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT, spawnLockkeeper, until, type ChildServer } from './child-server.ts';

const BIN = join(PROJECT_ROOT, 'bin/lockkeeper.js');

export interface SimulatorProcess {
  child: ChildProcess;
  kubernetes: string;
  config: string;
  /** The compute hook's address (with `--tenants`), else null. */
  computeHook: string | null;
  /** GET on the simulated API server, as the plugin's service account. */
  get(path: string): Promise<any>;
}

export interface ReplicaProcess extends ChildServer {
  name: string;
  health(): Promise<{ role: string; epoch: number | null; databaseStatus: string }>;
}

export class HaProcesses {
  readonly children: ChildProcess[] = [];

  async simulator(dir: string, args: string[]): Promise<SimulatorProcess> {
    const child = spawn(process.execPath, [BIN, 'simulator', '--config-out', join(dir, 'sim.config.json'), ...args], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.children.push(child);
    let out = '';
    let err = '';
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    const ready = await new Promise<{ kubernetes: string; config: string; computeHook: string | null }>((resolve, reject) => {
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const line = out.split('\n').find((l) => l.includes('simulator ready'));
        if (line) resolve(JSON.parse(line) as { kubernetes: string; config: string; computeHook: string | null });
      });
      child.once('exit', (code) => reject(new Error(`simulator exited (${code}): ${err}`)));
    });
    const kubeconfig = JSON.parse(readFileSync(`${ready.config}.kubeconfig`, 'utf8')) as { users: { user: { token: string } }[] };
    const token = kubeconfig.users[0]!.user.token;
    return { child, ...ready, get: async (path) => (await fetch(new URL(path, ready.kubernetes), { headers: { authorization: `Bearer ${token}` } })).json() };
  }

  /** A copy of the simulator's config with these settings on top (e.g. short leases). */
  static config(dir: string, simulatorConfig: string, extra: Record<string, unknown>): string {
    const file = join(dir, 'gateway.config.json');
    const config = JSON.parse(readFileSync(simulatorConfig, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify({ ...config, ...extra }));
    return file;
  }

  async replica(name: string, config: string, dir: string, databaseUrl: string): Promise<ReplicaProcess> {
    const server = spawnLockkeeper({ LOCKKEEPER_CONFIG: config, LOCKKEEPER_DATABASE_URL: databaseUrl }, dir);
    this.children.push(server.child);
    await server.ready;
    const origin = new URL(server.url).origin;
    return Object.assign(server, {
      name,
      // A frozen (SIGSTOPped) replica accepts the connection and never answers: give up after 2 s.
      health: async () =>
        (await (await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(2000) })).json()) as {
          role: string;
          epoch: number | null;
          databaseStatus: string;
        },
    });
  }

  /** Kills what is still running (SIGCONT first: a stopped process ignores nothing but SIGKILL, and must not stay stopped). */
  async stop(): Promise<void> {
    for (const c of this.children.splice(0)) {
      if (c.exitCode !== null || c.signalCode !== null) continue;
      c.kill('SIGCONT');
      c.kill('SIGKILL');
      await new Promise((resolve) => c.once('exit', resolve));
    }
  }
}

const alive = (r: ReplicaProcess) => r.child.exitCode === null && r.child.signalCode === null;

/** The single replica that says it leads at an epoch above `after`, once there is one; two leaders at once throw. */
export async function leaderOf(replicas: ReplicaProcess[], after = 0, everyMs = 50): Promise<{ leader: ReplicaProcess; epoch: number }> {
  return until(
    async () => {
      const states = await Promise.all(replicas.filter(alive).map(async (r) => ({ r, h: await r.health().catch(() => null) })));
      const leaders = states.filter((s) => s.h?.role === 'leader');
      if (leaders.length > 1) throw new Error(`two replicas lead at once: ${leaders.map((s) => s.r.name).join(', ')}`);
      const [one] = leaders;
      return one && one.h!.epoch! > after ? { leader: one.r, epoch: one.h!.epoch! } : undefined;
    },
    `a leader above epoch ${after}`,
    90_000,
    everyMs,
  );
}
