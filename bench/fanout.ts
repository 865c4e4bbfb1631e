/**
 * Subscription fan-out (issue 29, point 3): N graphql-ws clients subscribed to
 * `nodeChanged`, changes driven through the API (`configureNode`, alternating PAUSE and
 * ACTIVE), against a bare graphql-yoga + graphql-ws server of the same shape (a
 * `nodeChanged` subscription fed by yoga's pub/sub, a `configureNode` mutation that
 * publishes) in the same run, alternating, each round on a fresh server. The clients run
 * in a child process (bench/fanout-client.ts). Figures: events delivered per second (N ×
 * changes over the time from the first mutation sent to the last event received) and the
 * p99 of each event's latency from its mutation's sending.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { createPubSub, createSchema, createYoga } from 'graphql-yoga';
import { WebSocketServer } from 'ws';
import { createSimulatedCluster, generateTopology } from '../plugins/fake/index.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { createLogger } from '../src/logger.ts';
import { buildApp } from '../src/server.ts';
import { openDatabase } from '../src/store/database.ts';
import type { Benchmark, BenchReport } from './benchmark.ts';
import type { FanoutChildMessage, FanoutResult, FanoutSpec } from './fanout-client.ts';
import { quantile } from './load.ts';

const CLIENTS = Number(process.env.LOCKKEEPER_BENCH_FANOUT_CLIENTS ?? 1000);
const CHANGES = 20;
const ROUNDS = 5;
const GOAL_RATE = 0.9;
const GOAL_P99 = 1.2;
const SUBSCRIPTION = 'subscription { nodeChanged { id name availability schedulingPolicy maySchedule } }';
const MUTATION = 'mutation ($p: SchedulingPolicy!) { configureNode(nodeId: "1", policy: $p) { __typename } }';
const MUTATIONS = ['PAUSE', 'ACTIVE'].map((p) => JSON.stringify({ query: MUTATION, variables: { p } }));

const BARE_SDL = /* GraphQL */ `
  enum NodeAvailability {
    ACTIVE
    WARMING_UP
    OFFLINE
  }
  enum SchedulingPolicy {
    ACTIVE
    PAUSE
    PAUSE_FOR_RESTART
    DRAINING
    FILLING
  }
  type ClusterNode {
    id: ID!
    name: String!
    availability: NodeAvailability!
    schedulingPolicy: SchedulingPolicy!
    maySchedule: Boolean!
  }
  type Query {
    node(id: ID!): ClusterNode
  }
  type Mutation {
    configureNode(nodeId: ID!, policy: SchedulingPolicy!): ClusterNode
  }
  type Subscription {
    nodeChanged(nodeId: ID): ClusterNode!
  }
`;

interface Target {
  label: string;
  /** Bearer token of the clients and the mutations (Lockkeeper: authentication on). */
  token?: string;
  httpUrl: string;
  wsUrl: string;
  stop(): Promise<void>;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

async function startLockkeeper(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-fanout-'));
  const db = await openDatabase({ url: `file:${join(dir, 'bench.db')}` });
  const app = buildApp({
    backend: createSimulatedCluster({ topology: generateTopology({ nodes: 4 }) }),
    log: createLogger('silent'),
    prisma: db.prisma,
    hotPath: db.hotPath,
    // Every limit in force but the mutation rate: the benchmark's mutations are its clock, not abuse.
    config: { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, mutationsPerMinute: 0 } },
    onClose: () => db.close(),
  });
  const { url } = await app.start(0, '127.0.0.1');
  // Authentication on, as in production: the subscriptions watch their token for revocation.
  const { token } = await app.auth.createToken({ name: 'bench-admin', scope: 'admin', createdBy: 'bench' });
  return {
    label: 'Lockkeeper',
    token,
    httpUrl: url,
    wsUrl: url.replace(/^http/, 'ws'),
    stop: async () => {
      await app.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** yoga's own graphql-ws recipe over the same shape: the mutation publishes the node it changed. */
async function startBare(): Promise<Target> {
  const pubsub = createPubSub<{ nodeChanged: [unknown] }>();
  const node = { id: '1', name: 'node-1', availability: 'ACTIVE', schedulingPolicy: 'ACTIVE', maySchedule: true };
  const yoga = createYoga({
    schema: createSchema({
      typeDefs: BARE_SDL,
      resolvers: {
        Query: { node: () => node },
        Mutation: {
          configureNode: (_: unknown, { policy }: { policy: string }) => {
            Object.assign(node, { schedulingPolicy: policy, maySchedule: policy === 'ACTIVE' });
            pubsub.publish('nodeChanged', { ...node });
            return node;
          },
        },
        Subscription: { nodeChanged: { subscribe: () => pubsub.subscribe('nodeChanged'), resolve: (n: unknown) => n } },
      },
    }),
    graphqlEndpoint: '/graphql',
    graphiql: false,
    landingPage: false,
    logging: false,
  });
  const server = createServer(yoga);
  const wss = new WebSocketServer({ server, path: '/graphql' });
  type Enveloped = { rootValue: { execute: (a: ExecutionArgs) => unknown; subscribe: (a: ExecutionArgs) => unknown } };
  const ws = useServer(
    {
      execute: (args: unknown) => (args as Enveloped).rootValue.execute(args as ExecutionArgs) as never,
      subscribe: (args: unknown) => (args as Enveloped).rootValue.subscribe(args as ExecutionArgs) as never,
      onSubscribe: async (ctx, _id, params) => {
        const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
          ...ctx,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params,
        });
        const args = {
          schema,
          operationName: params.operationName,
          document: parse(params.query),
          variableValues: params.variables,
          contextValue: await contextFactory(),
          rootValue: { execute, subscribe },
        };
        const errors = validate(args.schema, args.document);
        return errors.length ? errors : args;
      },
    },
    wss,
  );
  const port = await listen(server);
  return {
    label: 'bare graphql-yoga + graphql-ws',
    httpUrl: `http://127.0.0.1:${port}/graphql`,
    wsUrl: `ws://127.0.0.1:${port}/graphql`,
    stop: async () => {
      await ws.dispose();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function runClients(target: Target): Promise<FanoutResult> {
  const child = fork(fileURLToPath(new URL('./fanout-client.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const spec: FanoutSpec = {
    wsUrl: target.wsUrl,
    httpUrl: target.httpUrl,
    token: target.token,
    clients: CLIENTS,
    subscription: SUBSCRIPTION,
    mutations: MUTATIONS,
    changes: CHANGES,
  };
  return new Promise<FanoutResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`fan-out clients exited (code ${code}) before reporting`)));
    child.on('message', (m: FanoutChildMessage) => (m.type === 'done' ? resolve(m.result) : reject(new Error(`against ${target.label}: ${m.error}`))));
    child.send({ type: 'start', spec });
  }).finally(() => {
    if (child.exitCode === null) child.kill();
  });
}

interface Round {
  label: string;
  rate: number;
  p50: number;
  p99: number;
  load: number;
}

async function round(start: () => Promise<Target>): Promise<Round> {
  const target = await start();
  try {
    const load = loadavg()[0]!;
    const r = await runClients(target);
    return { label: target.label, rate: r.events / (r.elapsedMs / 1000), p50: quantile(r.latenciesMs, 0.5), p99: quantile(r.latenciesMs, 0.99), load };
  } finally {
    await target.stop();
  }
}

export const fanout: Benchmark = {
  name: 'fanout',
  title: `Subscription fan-out: ${CLIENTS.toLocaleString('en')} graphql-ws clients on nodeChanged × ${CHANGES} changes through configureNode, against a bare graphql-yoga + graphql-ws server of the same shape`,
  async run(options, progress): Promise<BenchReport> {
    const rounds: Round[] = [];
    // One unmeasured round each (JIT, Prisma), then alternating measured rounds.
    for (const start of [startLockkeeper, startBare]) await round(start);
    for (let i = 0; i < Math.max(options.rounds, ROUNDS); i++) {
      for (const start of [startLockkeeper, startBare]) {
        const r = await round(start);
        progress(`  ${r.label}: ${r.rate.toFixed(0)} events/s, p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms (load ${r.load.toFixed(2)})`);
        rounds.push(r);
      }
    }
    const best = (label: string) => {
      const mine = rounds.filter((r) => r.label === label);
      return { rate: Math.max(...mine.map((r) => r.rate)), p99: Math.min(...mine.map((r) => r.p99)) };
    };
    const lk = best('Lockkeeper');
    const bare = best('bare graphql-yoga + graphql-ws');
    const rate = lk.rate / bare.rate;
    const p99 = lk.p99 / bare.p99;
    const verdict = (ok: boolean, goal: string) => (ok ? `meets ${goal}` : `**misses ${goal}**`);
    const busy = Math.max(...rounds.map((r) => r.load)) > cpus().length;
    return {
      summary: `fanout: ${rate.toFixed(2)} of bare events/s (${verdict(rate >= GOAL_RATE, `≥ ${GOAL_RATE}`)}), p99 ${p99.toFixed(2)} × bare (${verdict(p99 <= GOAL_P99, `≤ ${GOAL_P99}`)})`,
      markdown: [
        `${CLIENTS} clients in a child process, one graphql-ws connection and one \`${SUBSCRIPTION}\` each; ${CHANGES} \`configureNode\` mutations over HTTP, one after the other; each round on a fresh server, Lockkeeper (simulated cluster of 4 nodes, SQLite, authentication on with an admin token, every limit in force but the mutation rate) and the bare server alternating, after one unmeasured round each.`,
        '',
        '| round | server | events/s | p50 ms | p99 ms | load (1 min) |',
        '|---:|---|---:|---:|---:|---:|',
        ...rounds.map(
          (r, i) => `| ${Math.floor(i / 2) + 1} | ${r.label} | ${r.rate.toFixed(0)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} | ${r.load.toFixed(2)} |`,
        ),
        '',
        `**Best of each: ${lk.rate.toFixed(0)} vs ${bare.rate.toFixed(0)} events/s = ${rate.toFixed(2)} of bare** (${verdict(rate >= GOAL_RATE, `the goal of ≥ ${GOAL_RATE}`)}); **p99 ${lk.p99.toFixed(0)} vs ${bare.p99.toFixed(0)} ms = ${p99.toFixed(2)} × bare** (${verdict(p99 <= GOAL_P99, `the goal of ≤ ${GOAL_P99}`)}).`,
        ...(busy ? ['', `The load was above the ${cpus().length} cores (a shared machine): a quiet re-run is due.`] : []),
      ].join('\n'),
    };
  },
};
