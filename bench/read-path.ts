/**
 * Read-path throughput: `vms(first: 500)` with each VM's node name, against Lockkeeper
 * (the full stack over a simulated cluster of 4 nodes × 125 VMs) and against a bare
 * graphql-yoga server whose resolver returns the same JSON precomputed, both listening
 * on loopback in this process and loaded alternately by a client in another process.
 * The ratio says what Lockkeeper's schema, resolvers and backend reads cost on top of
 * yoga itself; backend calls per request say whether the read path batches.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSchema, createYoga } from 'graphql-yoga';
import { createSimulatedCluster, generateTopology } from '../plugins/fake/index.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { createLogger } from '../src/logger.ts';
import { buildApp } from '../src/server.ts';
import { openDatabase } from '../src/store/database.ts';
import type { Benchmark, BenchOptions, BenchReport } from './benchmark.ts';
import { quantile, runLoad, type PhaseResult } from './load.ts';

const READ_PATH_QUERY = '{ vms(first: 500) { edges { node { name node { name } } } } }';
const NODES = 4;
const VMS_PER_NODE = 125;
/** Throughput of Lockkeeper relative to bare yoga that the read path must reach. */
const GOAL_RATIO = 0.7;

const BARE_SDL = /* GraphQL */ `
  type Query {
    vms(first: Int): VirtualMachineConnection!
  }
  type VirtualMachineConnection {
    edges: [VirtualMachineEdge!]!
  }
  type VirtualMachineEdge {
    node: VirtualMachine!
  }
  type VirtualMachine {
    name: String!
    node: ClusterNode
  }
  type ClusterNode {
    name: String!
  }
`;

interface Target {
  label: string;
  url: string;
  /** Backend calls so far, by name (Lockkeeper only). */
  callCounts?: () => Map<string, number>;
  stop(): Promise<void>;
}

interface Sample {
  result: PhaseResult;
  calls: Map<string, number> | null;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve(`http://127.0.0.1:${port}/graphql`);
    });
  });
}

async function startLockkeeper(): Promise<Target> {
  // The app needs its database (operations, audit log); the read path does not touch it.
  const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-bench-'));
  const db = await openDatabase({ url: `file:${join(dir, 'bench.db')}` });
  const cluster = createSimulatedCluster({ topology: generateTopology({ nodes: NODES, vmsPerNode: VMS_PER_NODE }) });
  const app = buildApp({
    backend: cluster,
    log: createLogger('silent'),
    prisma: db.prisma,
    hotPath: db.hotPath,
    config: DEFAULT_CONFIG,
    onClose: () => db.close(),
  });
  const { url } = await app.start(0, '127.0.0.1');
  return {
    label: 'Lockkeeper',
    url,
    callCounts: () => new Map(cluster.callCounts),
    stop: async () => {
      await app.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A bare yoga of the same shape whose resolver returns `vms` as given. */
async function startBareYoga(vms: unknown): Promise<Target> {
  const yoga = createYoga({
    schema: createSchema({ typeDefs: BARE_SDL, resolvers: { Query: { vms: () => vms } } }),
    graphqlEndpoint: '/graphql',
    graphiql: false,
    landingPage: false,
    logging: false,
  });
  const server = createServer(yoga);
  const url = await listen(server);
  return {
    label: 'bare graphql-yoga',
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function post(url: string, query: string): Promise<string> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}: ${text.slice(0, 200)}`);
  return text;
}

function diff(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, n] of after) if (n - (before.get(name) ?? 0) > 0) out.set(name, n - (before.get(name) ?? 0));
  return out;
}

interface Summary {
  label: string;
  requests: number;
  elapsedMs: number;
  rps: number;
  perRoundRps: number[];
  p50: number;
  p99: number;
  callsPerRequest: number | null;
  callsByName: Map<string, number> | null;
}

function summarize(label: string, samples: Sample[]): Summary {
  const requests = samples.reduce((n, s) => n + s.result.requests, 0);
  const elapsedMs = samples.reduce((n, s) => n + s.result.elapsedMs, 0);
  const latencies = samples.flatMap((s) => s.result.latenciesMs).sort((a, b) => a - b);
  let callsByName: Map<string, number> | null = null;
  for (const s of samples) {
    if (!s.calls) continue;
    callsByName ??= new Map();
    for (const [name, n] of s.calls) callsByName.set(name, (callsByName.get(name) ?? 0) + n);
  }
  const totalCalls = callsByName ? [...callsByName.values()].reduce((a, b) => a + b, 0) : null;
  return {
    label,
    requests,
    elapsedMs,
    rps: requests / (elapsedMs / 1000),
    perRoundRps: samples.map((s) => s.result.requests / (s.result.elapsedMs / 1000)),
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    callsPerRequest: totalCalls === null ? null : totalCalls / requests,
    callsByName,
  };
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function calls(s: Summary): string {
  if (s.callsPerRequest === null || !s.callsByName) return '— (no backend)';
  const parts = [...s.callsByName].sort(([a], [b]) => a.localeCompare(b)).map(([name, n]) => `${name} ${fmt(n / s.requests, 2)}`);
  return `${fmt(s.callsPerRequest, 2)} (${parts.join(', ')})`;
}

async function run(options: BenchOptions, progress: (line: string) => void): Promise<BenchReport> {
  const ours = await startLockkeeper();
  let bare: Target | undefined;
  try {
    const reference = await post(ours.url, READ_PATH_QUERY);
    const parsed = JSON.parse(reference) as { data?: { vms: { edges: unknown[] } }; errors?: unknown };
    if (parsed.errors || parsed.data?.vms.edges.length !== NODES * VMS_PER_NODE) {
      throw new Error(`Lockkeeper did not answer with ${NODES * VMS_PER_NODE} VMs: ${reference.slice(0, 300)}`);
    }
    bare = await startBareYoga(parsed.data.vms);
    const bareBody = await post(bare.url, READ_PATH_QUERY);
    if (bareBody !== reference) throw new Error('the bare yoga server does not return the same JSON as Lockkeeper');
    const expectedBytes = Buffer.byteLength(reference);

    const samples = new Map<Target, Sample[]>([
      [ours, []],
      [bare, []],
    ]);
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? [ours, bare] : [bare, ours];
      for (const target of order) {
        let before: Map<string, number> | null = null;
        const result = await runLoad(
          {
            url: target.url,
            body: JSON.stringify({ query: READ_PATH_QUERY }),
            expectedBytes,
            concurrency: options.concurrency,
            warmupMs: options.warmupMs,
            durationMs: options.durationMs,
            maxRequests: 5_000_000,
          },
          () => (before = target.callCounts?.() ?? null),
        );
        if (result.errors > 0) throw new Error(`${target.label}: ${result.errors} failed requests, first: ${result.firstError}`);
        const calls = before && target.callCounts ? diff(target.callCounts(), before) : null;
        samples.get(target)!.push({ result, calls });
        progress(
          `  round ${round + 1}/${options.rounds} ${target.label}: ${fmt(result.requests / (result.elapsedMs / 1000))} req/s (${result.requests} requests)`,
        );
      }
    }

    const a = summarize(ours.label, samples.get(ours)!);
    const b = summarize(bare.label, samples.get(bare)!);
    const ratio = a.rps / b.rps;
    const verdict = ratio >= GOAL_RATIO ? `meets the goal of ≥ ${GOAL_RATIO}` : `**below the goal of ≥ ${GOAL_RATIO}**`;
    const row = (s: Summary) =>
      `| ${s.label} | ${fmt(s.rps)} | ${s.perRoundRps.map((r) => fmt(r)).join(' / ')} | ${fmt(s.p50, 2)} | ${fmt(s.p99, 2)} | ${fmt(s.requests)} | ${calls(s)} |`;
    const markdown = [
      `Query: \`${READ_PATH_QUERY}\` (${NODES * VMS_PER_NODE} VMs, response ${fmt(expectedBytes)} bytes, identical from both servers).`,
      `Lockkeeper: \`buildApp\` over \`createSimulatedCluster({ topology: generateTopology({ nodes: ${NODES}, vmsPerNode: ${VMS_PER_NODE} }) })\` (its SQLite database in a temp dir; reads do not touch it).`,
      'Bare graphql-yoga: `createYoga` with an SDL schema of the same shape whose resolver returns the response precomputed.',
      `Load: ${options.concurrency} concurrent keep-alive HTTP/1.1 clients in a separate Node process, loopback; per target and round ` +
        `${fmt(options.warmupMs / 1000, 1)} s warm-up, then ${fmt(options.durationMs / 1000, 1)} s measured; ${options.rounds} rounds, targets alternating.`,
      '',
      '| server | requests/s | per round | p50 ms | p99 ms | requests | backend calls / request |',
      '|---|---:|---:|---:|---:|---:|---|',
      row(a),
      row(b),
      '',
      `**Ratio Lockkeeper / bare yoga: ${fmt(ratio, 2)}** (${verdict}).`,
    ].join('\n');
    return {
      markdown,
      summary: `read-path: Lockkeeper ${fmt(a.rps)} req/s, bare yoga ${fmt(b.rps)} req/s, ratio ${fmt(ratio, 2)}; ${calls(a)} backend calls per request`,
    };
  } finally {
    await bare?.stop();
    await ours.stop();
  }
}

export const readPath: Benchmark = {
  name: 'read-path',
  title: 'Read-path throughput: vms(first: 500) with node names, Lockkeeper vs. bare graphql-yoga',
  run,
};
