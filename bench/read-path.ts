/**
 * Read-path throughput against bare graphql-yoga floors, both listening on loopback in this
 * process and loaded alternately (per round, per scenario) by a client in another process:
 *
 * - `vms(first: 500)` with each VM's node name (a simulated cluster of 4 nodes × 125 VMs)
 *   against a bare yoga with an SDL schema of the same shape whose resolver returns the
 *   same JSON precomputed: what Lockkeeper's schema, resolvers and backend reads cost on top
 *   of yoga executing the same selection.
 * - `{ __typename }` and the demo's node list (issue 29 point 4) against a ONE-FIELD bare
 *   yoga answering the same JSON: Lockkeeper's fixed cost of a request (router guards, body
 *   limit, CSRF, bearer token looked up in the database, context and loaders, depth, cost
 *   and alias limits, rate limit, error masking, compiled execution) on top of yoga's own.
 *
 * Lockkeeper runs with authentication enforced: every request carries a `viewer` API token
 * created in its database (not the bootstrap token, which is a string compare), so the
 * per-request token check is in what is measured. Every limit is at its default.
 * The best round of each server is reported (issue 29: best of at least five after a
 * warm-up), with the 1-minute load average beside every round.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSchema, createYoga } from 'graphql-yoga';
import { createSimulatedCluster, generateTopology } from '../plugins/fake/index.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { createLogger } from '../src/logger.ts';
import { buildApp } from '../src/server.ts';
import { openDatabase } from '../src/store/database.ts';
import type { Benchmark, BenchOptions, BenchReport } from './benchmark.ts';
import { quantile, runLoad, type PhaseResult } from './load.ts';

const NODES = 4;
const VMS_PER_NODE = 125;
/** Throughput of Lockkeeper relative to each bare yoga floor that the read path must reach. */
const GOAL_RATIO = 0.7;
/** Rounds at least (issue 29: best of at least five). */
const MIN_ROUNDS = 5;

interface Scenario {
  name: string;
  query: string;
  /** Which Lockkeeper answers it: the 4 × 125 VM cluster, or the demo topology (`npm start`'s). */
  cluster: 'vms' | 'demo';
  /** The bare yoga's schema; its one root field resolves to the response's `data` field of that name. */
  bareSdl: string;
  /** How the bare floor answers, for the report. */
  floor: string;
  check(data: Record<string, unknown>): void;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'vms(first: 500)',
    query: '{ vms(first: 500) { edges { node { name node { name } } } } }',
    cluster: 'vms',
    bareSdl: /* GraphQL */ `
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
    `,
    floor: 'same-shape SDL schema, resolver returns the response precomputed; graphql-js walks 500 objects',
    check: (data) => {
      const n = (data.vms as { edges: unknown[] }).edges.length;
      if (n !== NODES * VMS_PER_NODE) throw new Error(`${n} VMs, expected ${NODES * VMS_PER_NODE}`);
    },
  },
  {
    name: '{ __typename }',
    query: '{ __typename }',
    cluster: 'demo',
    bareSdl: 'type Query { ok: Boolean }',
    floor: 'one-field schema `type Query { ok: Boolean }`',
    check: (data) => {
      if (data.__typename !== 'Query') throw new Error(`__typename ${String(data.__typename)}`);
    },
  },
  {
    name: 'demo node list',
    query: '{ nodes { totalCount edges { node { id name cordoned availability schedulingPolicy } } } }',
    cluster: 'demo',
    bareSdl: /* GraphQL */ `
      type Query {
        nodes: NodeConnection!
      }
      type NodeConnection {
        totalCount: Int!
        edges: [NodeEdge!]!
      }
      type NodeEdge {
        node: Node!
      }
      type Node {
        id: ID!
        name: String!
        cordoned: Boolean!
        availability: String!
        schedulingPolicy: String!
      }
    `,
    floor: 'one root field of the same shape, resolver returns the response precomputed',
    check: (data) => {
      const n = (data.nodes as { edges: unknown[] }).edges.length;
      if (n !== 4) throw new Error(`${n} nodes, expected the demo's 4`);
    },
  },
];

interface Target {
  label: string;
  url: string;
  /** Sent with every request: Lockkeeper's API token (the bare servers get it too, and ignore it). */
  headers: Record<string, string>;
  /** Backend calls so far, by name (Lockkeeper only). */
  callCounts?: () => Map<string, number>;
  stop(): Promise<void>;
}

interface Sample {
  result: PhaseResult;
  calls: Map<string, number> | null;
  /** 1-minute load average when the round ended. */
  load: number;
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

async function startLockkeeper(cluster: Scenario['cluster']): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-bench-'));
  const db = await openDatabase({ url: `file:${join(dir, 'bench.db')}` });
  const backend = createSimulatedCluster({
    topology: cluster === 'demo' ? 'demo' : generateTopology({ nodes: NODES, vmsPerNode: VMS_PER_NODE }),
  });
  const app = buildApp({
    backend,
    log: createLogger('silent'),
    prisma: db.prisma,
    hotPath: db.hotPath,
    config: DEFAULT_CONFIG,
    onClose: () => db.close(),
  });
  // A token in the database turns authentication on, as `lockkeeper token create` does.
  const { token } = await app.auth.createToken({ name: 'bench-reader', scope: 'viewer', createdBy: 'bench' });
  const { url } = await app.start(0, '127.0.0.1');
  return {
    label: 'Lockkeeper',
    url,
    headers: { authorization: `Bearer ${token}` },
    callCounts: () => new Map(backend.callCounts),
    stop: async () => {
      await app.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A bare yoga whose one root field resolves to `value` as given. */
async function startBareYoga(sdl: string, field: string, value: unknown, headers: Record<string, string>): Promise<Target> {
  const yoga = createYoga({
    schema: createSchema({ typeDefs: sdl, resolvers: { Query: { [field]: () => value } } }),
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
    headers,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function post(target: Target, query: string): Promise<string> {
  const res = await fetch(target.url, { method: 'POST', headers: { 'content-type': 'application/json', ...target.headers }, body: JSON.stringify({ query }) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${target.url}: HTTP ${res.status}: ${text.slice(0, 200)}`);
  return text;
}

function diff(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, n] of after) if (n - (before.get(name) ?? 0) > 0) out.set(name, n - (before.get(name) ?? 0));
  return out;
}

interface Summary {
  label: string;
  /** The best round's requests per second. */
  best: number;
  /** That round's load average. */
  bestLoad: number;
  rounds: { rps: number; load: number }[];
  p50: number;
  p99: number;
  requests: number;
  callsPerRequest: number | null;
  callsByName: Map<string, number> | null;
}

function summarize(label: string, samples: Sample[]): Summary {
  const rounds = samples.map((s) => ({ rps: s.result.requests / (s.result.elapsedMs / 1000), load: s.load }));
  const bestRound = rounds.reduce((a, b) => (b.rps > a.rps ? b : a));
  const requests = samples.reduce((n, s) => n + s.result.requests, 0);
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
    best: bestRound.rps,
    bestLoad: bestRound.load,
    rounds,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    requests,
    callsPerRequest: totalCalls === null ? null : totalCalls / requests,
    callsByName,
  };
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function calls(s: Summary): string {
  if (s.callsPerRequest === null || !s.callsByName) return '—';
  if (s.callsByName.size === 0) return '0';
  const parts = [...s.callsByName].sort(([a], [b]) => a.localeCompare(b)).map(([name, n]) => `${name} ${fmt(n / s.requests, 2)}`);
  return `${fmt(s.callsPerRequest, 2)} (${parts.join(', ')})`;
}

interface Pair {
  scenario: Scenario;
  ours: Target;
  bare: Target;
  expectedBytes: number;
  samples: Map<Target, Sample[]>;
}

async function pairFor(scenario: Scenario, ours: Target): Promise<Pair> {
  const reference = await post(ours, scenario.query);
  const parsed = JSON.parse(reference) as { data?: Record<string, unknown>; errors?: unknown };
  if (parsed.errors || !parsed.data) throw new Error(`Lockkeeper did not answer ${scenario.query}: ${reference.slice(0, 300)}`);
  scenario.check(parsed.data);
  const field = Object.keys(parsed.data)[0]!;
  const bare = await startBareYoga(scenario.bareSdl, field, parsed.data[field], ours.headers);
  const bareBody = await post(bare, scenario.query);
  if (bareBody !== reference) {
    await bare.stop();
    throw new Error(
      `${scenario.name}: the bare yoga server does not return the same JSON as Lockkeeper:\n${bareBody.slice(0, 300)}\n${reference.slice(0, 300)}`,
    );
  }
  return {
    scenario,
    ours,
    bare,
    expectedBytes: Buffer.byteLength(reference),
    samples: new Map([
      [ours, []],
      [bare, []],
    ]),
  };
}

async function measure(pair: Pair, target: Target, options: BenchOptions): Promise<Sample> {
  let before: Map<string, number> | null = null;
  const result = await runLoad(
    {
      url: target.url,
      body: JSON.stringify({ query: pair.scenario.query }),
      headers: target.headers,
      expectedBytes: pair.expectedBytes,
      concurrency: options.concurrency,
      warmupMs: options.warmupMs,
      durationMs: options.durationMs,
      maxRequests: 5_000_000,
    },
    () => (before = target.callCounts?.() ?? null),
  );
  if (result.errors > 0) throw new Error(`${target.label}, ${pair.scenario.name}: ${result.errors} failed requests, first: ${result.firstError}`);
  const calls = before && target.callCounts ? diff(target.callCounts(), before) : null;
  return { result, calls, load: loadavg()[0]! };
}

async function run(options: BenchOptions, progress: (line: string) => void): Promise<BenchReport> {
  const rounds = Math.max(options.rounds, MIN_ROUNDS);
  const servers = new Map<Scenario['cluster'], Target>();
  const pairs: Pair[] = [];
  try {
    for (const scenario of SCENARIOS) {
      let ours = servers.get(scenario.cluster);
      if (!ours) servers.set(scenario.cluster, (ours = await startLockkeeper(scenario.cluster)));
      pairs.push(await pairFor(scenario, ours));
    }
    for (let round = 0; round < rounds; round++) {
      for (const pair of pairs) {
        const order = round % 2 === 0 ? [pair.ours, pair.bare] : [pair.bare, pair.ours];
        for (const target of order) {
          const sample = await measure(pair, target, options);
          pair.samples.get(target)!.push(sample);
          progress(
            `  round ${round + 1}/${rounds} ${pair.scenario.name} ${target.label}: ${fmt(sample.result.requests / (sample.result.elapsedMs / 1000))} req/s (load ${sample.load.toFixed(2)})`,
          );
        }
      }
    }

    const rows: string[] = [];
    const detail: string[] = [];
    const summaries: string[] = [];
    for (const pair of pairs) {
      const a = summarize('Lockkeeper', pair.samples.get(pair.ours)!);
      const b = summarize('bare graphql-yoga', pair.samples.get(pair.bare)!);
      const ratio = a.best / b.best;
      const verdict = ratio >= GOAL_RATIO ? `meets ≥ ${GOAL_RATIO}` : `**below ${GOAL_RATIO}**`;
      rows.push(
        `| \`${pair.scenario.query}\` | ${fmt(a.best)} (load ${a.bestLoad.toFixed(2)}) | ${fmt(b.best)} (load ${b.bestLoad.toFixed(2)}) | **${fmt(ratio, 2)}** (${verdict}) | ${fmt(a.p99, 2)} / ${fmt(b.p99, 2)} | ${fmt(pair.expectedBytes)} | ${calls(a)} | ${pair.scenario.floor} |`,
      );
      detail.push(
        `| ${pair.scenario.name} | ${a.rounds.map((r, i) => `${fmt(r.rps)} / ${fmt(b.rounds[i]!.rps)} (${r.load.toFixed(1)}, ${b.rounds[i]!.load.toFixed(1)})`).join(' · ')} |`,
      );
      summaries.push(`${pair.scenario.name} ${fmt(a.best)} vs ${fmt(b.best)} req/s = ${fmt(ratio, 2)}`);
    }
    const markdown = [
      `Lockkeeper: \`buildApp\` with the default config (every limit at its default) over \`createSimulatedCluster\` — the demo topology, or \`generateTopology({ nodes: ${NODES}, vmsPerNode: ${VMS_PER_NODE} })\` for the VM list — ` +
        'its SQLite database in a temp dir, authentication enforced: every request carries a `viewer` API token stored in that database.',
      "Bare graphql-yoga: `createYoga` over `node:http` (the same server kind), its resolver returning the same JSON precomputed; each answer is checked byte for byte against Lockkeeper's before the load.",
      `Load: ${options.concurrency} concurrent keep-alive HTTP/1.1 clients in a separate Node process, loopback; per target and round ` +
        `${fmt(options.warmupMs / 1000, 1)} s warm-up, then ${fmt(options.durationMs / 1000, 1)} s measured; ${rounds} rounds, targets alternating (which goes first alternates too). Both servers run in this benchmark's process (tsx, no \`--optimize-for-size\`).`,
      '',
      '| query | Lockkeeper best req/s | bare best req/s | ratio of bests | p99 ms (all rounds) | response bytes | backend calls / request | bare floor |',
      '|---|---:|---:|---:|---:|---:|---|---|',
      ...rows,
      '',
      'Every round, Lockkeeper / bare req/s (1-minute load average at the end of each):',
      '',
      '| query | rounds |',
      '|---|---|',
      ...detail,
    ].join('\n');
    return { markdown, summary: `read-path: ${summaries.join('; ')} (goal ≥ ${GOAL_RATIO})` };
  } finally {
    for (const pair of pairs) await pair.bare.stop();
    for (const server of servers.values()) await server.stop();
  }
}

export const readPath: Benchmark = {
  name: 'read-path',
  title: 'Read-path throughput: Lockkeeper (authentication and every limit on) vs. bare graphql-yoga floors, best of at least five rounds',
  run,
};
