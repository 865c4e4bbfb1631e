/**
 * Real processes for high-availability tests and the take-over benchmark: `lockkeeper
 * simulator` (ha:B1) and `lockkeeper serve` replicas started with its config on one
 * PostgreSQL database. Every process started is kept in `children` for the caller to end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { REQUESTS_PATH, type LoggedRequest } from '../../simulators/common/index.ts';
import { CALLS_PATH } from '../../simulators/kubernetes/server.ts';
import { postGraphQL, SOURCE_CLI, spawnLockkeeper, until, type ChildServer } from './child-server.ts';
import { neonSchemas } from './neon-schemas.ts';
import { pageserverSchemaViolations } from './pageserver-schema-violations.ts';

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

/** Short leases (ha:§6); long enough that a loaded two-core machine does not drop a healthy leader. */
const SHORT_LEASES = { leaseTtlMs: 4000, leaseRenewMs: 1000 };

export class HaProcesses {
  readonly children: ChildProcess[] = [];
  private readonly clients: pg.Client[] = [];
  /** One pageserver of each simulator process started (their request log is shared): checked on stop(). */
  private readonly pageserverLogs: string[] = [];

  /** A connection to the replicas' database, for the test to read what they wrote; ended by stop(). */
  async database(url: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    this.clients.push(client);
    return client;
  }

  async simulator(dir: string, args: string[]): Promise<SimulatorProcess> {
    const child = spawn(process.execPath, [...SOURCE_CLI, 'simulator', '--config-out', join(dir, 'sim.config.json'), ...args], {
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
    const simConfig = JSON.parse(readFileSync(ready.config, 'utf8')) as { plugins?: { name: string; options: { pageservers?: { url: string }[] } }[] };
    const pageserver = simConfig.plugins?.find((p) => p.name === 'pageserver')?.options.pageservers?.[0];
    if (pageserver) this.pageserverLogs.push(pageserver.url);
    const kubeconfig = JSON.parse(readFileSync(`${ready.config}.kubeconfig`, 'utf8')) as { users: { user: { token: string } }[] };
    const token = kubeconfig.users[0]!.user.token;
    return { child, ...ready, get: async (path) => (await fetch(new URL(path, ready.kubernetes), { headers: { authorization: `Bearer ${token}` } })).json() };
  }

  /** A copy of the simulator's config with short leases and these settings on top. */
  static config(dir: string, simulatorConfig: string, extra: Record<string, unknown>): string {
    const file = join(dir, 'gateway.config.json');
    const config = JSON.parse(readFileSync(simulatorConfig, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify({ ...config, ha: SHORT_LEASES, ...extra }));
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

  /**
   * The pageservers of a simulator process are checked against Neon's API from here (the
   * vitest setup instruments only the simulators in the test's own process): every request in
   * their log, and the answers the log keeps. Violations fail the test in the setup's afterEach.
   */
  private async checkPageserverSchemas(): Promise<void> {
    for (const url of this.pageserverLogs.splice(0)) {
      const log = await fetch(new URL(REQUESTS_PATH, url), { signal: AbortSignal.timeout(5000) }).then(
        async (r) => ((await r.json()) as { items: LoggedRequest[] }).items,
        () => null,
      );
      if (!log) continue; // The simulator process is gone (a test that killed it): nothing to read.
      const schemas = neonSchemas();
      const violations = pageserverSchemaViolations();
      for (const e of log.filter((e) => e.source.startsWith('node '))) {
        violations.push(...schemas.checkRequest(e).map((v) => `${e.source}: ${v}`));
        if (e.status !== undefined && e.response !== undefined)
          violations.push(...schemas.checkResponse(e, e.status, e.response).map((v) => `${e.source}: ${v}`));
      }
    }
  }

  /** Kills what is still running (SIGCONT first: a stopped process ignores nothing but SIGKILL, and must not stay stopped). */
  async stop(): Promise<void> {
    await this.checkPageserverSchemas();
    for (const c of this.clients.splice(0)) await c.end();
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

export interface OperationRow {
  state: string;
  counts: string;
}

export async function operation(db: pg.Client, id: string): Promise<OperationRow> {
  const { rows } = await db.query<OperationRow>(`SELECT "state", "counts" FROM "Operation" WHERE "id" = $1`, [id]);
  return rows[0]!;
}

/** Resolves with the operation once it has ended (neither RUNNING nor CANCELLING). */
export function operationEnded(db: pg.Client, id: string, what: string): Promise<OperationRow> {
  return until(
    async () => {
      const o = await operation(db, id);
      return o.state === 'RUNNING' || o.state === 'CANCELLING' ? undefined : o;
    },
    what,
    120_000,
    50,
  );
}

export const moved = (op: { counts: string }) => (JSON.parse(op.counts) as { moved: number }).moved;

export interface SimulatorCall {
  verb: string;
  resource: string;
  name?: string;
  sender?: string;
}

/** The writes the simulated API server received, in order, each with the `x-lockkeeper-sender` it came with (ha:L3). */
export async function writes(sim: SimulatorProcess): Promise<SimulatorCall[]> {
  const { items } = (await sim.get(CALLS_PATH)) as { items: SimulatorCall[] };
  return items.filter((c) => !['get', 'list', 'watch'].includes(c.verb));
}

/** `host:pid:random@epoch/scope` (src/cluster/authority.ts) as pid and epoch; null when the call named no sender, or a stand-by (`…@standby/discovery`). */
export function senderOf(call: { sender?: string }): { pid: number; epoch: number } | null {
  const m = /^.*:(\d+):[0-9a-f]+@(\d+)\/[\w-]+$/.exec(call.sender ?? '');
  return m ? { pid: Number(m[1]), epoch: Number(m[2]) } : null;
}

/** The sender of each write the API server received, in arrival order; a write that named none throws. */
export async function senders(sim: SimulatorProcess): Promise<{ pid: number; epoch: number }[]> {
  return (await writes(sim)).map((c) => senderOf(c) ?? fail(`a ${c.verb} of ${c.resource} without a sender`));
}

/** Every request the simulated pageservers and the compute hook received (one log), in arrival order, each with its `sender` (ha:L3). */
export async function pageserverRequests(sim: SimulatorProcess): Promise<LoggedRequest[]> {
  const hook = sim.computeHook ?? fail('the simulator serves no pageservers (start it with --tenants)');
  const { items } = (await (await fetch(new URL(REQUESTS_PATH, hook))).json()) as { items: LoggedRequest[] };
  return items;
}

function fail(message: string): never {
  throw new Error(message);
}

/** Resolves once `replica` has acted as leader at `epoch`: a write of its own at that epoch reached the API server. */
export async function untilActed(sim: SimulatorProcess, replica: ReplicaProcess, epoch: number): Promise<void> {
  const pid = replica.child.pid;
  await until(
    async () => ((await senders(sim)).some((s) => s.pid === pid && s.epoch === epoch) ? true : undefined),
    `a write of ${replica.name} at epoch ${epoch}`,
    90_000,
    50,
  );
}

/** Starts a maintenance of `node` through `replica` (any replica admits it: ha:R2) and returns the operation's id. */
export async function enableMaintenance(replica: ReplicaProcess, node: string): Promise<string> {
  const data = await postGraphQL(
    replica.url,
    `mutation { enableMaintenanceMode(nodeId: "${node}") { __typename ... on Operation { id } ... on Error { message } } }`,
  );
  if (data.enableMaintenanceMode.__typename !== 'Operation') throw new Error(`maintenance of ${node} refused: ${JSON.stringify(data.enableMaintenanceMode)}`);
  return data.enableMaintenanceMode.id as string;
}

/**
 * Until `replica` reads every node of `ids` ACTIVE. A leader elected on a fresh database finds
 * the pageservers OFFLINE until its first heartbeat round has reached them (neon:H4), and a
 * stand-by follows what the leader persisted (ha:L8): a drain started before then is refused
 * with UnavailableError (`node 1 is OFFLINE, not ACTIVE`).
 */
export async function nodesActive(replica: ReplicaProcess, ids: string[]): Promise<void> {
  await until(
    async () => {
      const { edges } = (await postGraphQL(replica.url, '{ nodes(first: 100) { edges { node { id availability } } } }')).nodes as {
        edges: { node: { id: string; availability: string } }[];
      };
      const active = new Set(edges.filter((e) => e.node.availability === 'ACTIVE').map((e) => e.node.id));
      return ids.every((n) => active.has(n)) ? true : undefined;
    },
    `nodes ${ids.join(', ')} ACTIVE on ${replica.name}`,
    90_000,
    100,
  );
}
