import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type Client } from 'graphql-ws';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { until } from '../support/child-server.ts';
import { untilSubscribed } from '../support/subscribers.ts';

let started: Started | undefined;
let client: Client | undefined;

afterEach(async () => {
  await client?.dispose();
  await started?.app.stop();
  client = undefined;
  started = undefined;
});

async function start(config?: object): Promise<Started> {
  const cwd = mkdtempSync(join(tmpdir(), 'lk-e2e-'));
  const env: NodeJS.ProcessEnv = {};
  if (config) {
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(cwd, 'lockkeeper.config.json'), JSON.stringify(config));
  }
  started = await startLockkeeper({ log: createLogger('silent'), env, cwd, port: 0 });
  return started;
}

async function post(url: string, query: string) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  return (await res.json()) as { data?: any; errors?: unknown[] };
}

/** Collects subscription results until `count` have arrived. */
function collect(c: Client, query: string, count: number): { results: any[]; done: Promise<any[]> } {
  const results: any[] = [];
  const done = new Promise<any[]>((resolve, reject) => {
    const stop = c.subscribe(
      { query },
      {
        next: (msg) => {
          results.push(msg.data);
          if (results.length >= count) {
            stop();
            resolve(results);
          }
        },
        error: reject,
        complete: () => resolve(results),
      },
    );
  });
  return { results, done };
}

describe('the real server', () => {
  it('creates and migrates ./data/lockkeeper.db, answers /healthz, GraphQL over HTTP and GraphiQL', async () => {
    const s = await start();
    expect(s.databaseFile).toMatch(/data[/\\]lockkeeper\.db$/);
    const base = s.url.replace(/\/graphql$/, '');
    const health = await (await fetch(`${base}/healthz`)).json();
    expect(health).toMatchObject({ status: 'ok', backend: 'fake', database: 'up', databaseFile: s.databaseFile });
    expect((await post(s.url, '{ nodes { totalCount } }')).data.nodes.totalCount).toBe(4);
    const page = await fetch(s.url, { headers: { accept: 'text/html' } });
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(html).toContain('Lockkeeper');
    // Assets are inlined from the package: no script or stylesheet from another host.
    expect(html).not.toMatch(/<script[^>]+src=["']https?:/);
    expect(html).not.toMatch(/<link[^>]+href=["']https?:/);
    const get = await fetch(`${s.url}?query=${encodeURIComponent('{ node(id: "1") { ... on ClusterNode { name } } }')}`);
    expect(((await get.json()) as any).data.node.name).toBeTruthy();
  });

  it('streams nodeChanged and workloadChanged over graphql-ws while the simulated cluster changes', async () => {
    const s = await start({ plugins: [{ name: 'fake', options: { latenciesMs: { stop: 20 }, restartDelayMs: 50, heartbeatIntervalMs: 50 } }] });
    client = createClient({ url: s.url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
    const nodes = collect(client, 'subscription { nodeChanged(nodeId: "2") { id availability } }', 3);
    const vms = collect(client, 'subscription { workloadChanged(kind: VM) { kind id removed vm { status runStrategy } } }', 1);
    // Both subscriptions listen before anything happens.
    await untilSubscribed(s.app.bus, 'nodeChanged');
    await untilSubscribed(s.app.bus, 'workloadChanged');

    const restart = await post(s.url, 'mutation { simulation { restartNode(nodeId: "2") { __typename ... on ClusterNode { availability } } } }');
    expect(restart.data.simulation.restartNode).toEqual({ __typename: 'ClusterNode', availability: 'OFFLINE' });
    const nodeEvents = await nodes.done;
    // OFFLINE, then WARMING_UP on re-attach, then ACTIVE after a heartbeat.
    expect(nodeEvents.map((e) => e.nodeChanged.availability)).toEqual(['OFFLINE', 'WARMING_UP', 'ACTIVE']);
    expect(nodeEvents.every((e) => e.nodeChanged.id === '2')).toBe(true);
    const [vmEvent] = await vms.done;
    expect(vmEvent.workloadChanged).toMatchObject({ kind: 'VM', removed: false });
  });

  it('graceful stop ends open subscriptions and frees the port', async () => {
    const s = await start();
    client = createClient({ url: s.url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
    const ended = new Promise<string>((resolve) => {
      client!.subscribe(
        { query: 'subscription { nodeChanged { id } }' },
        { next: () => {}, error: () => resolve('error'), complete: () => resolve('complete') },
      );
    });
    await untilSubscribed(s.app.bus, 'nodeChanged');
    await s.app.stop();
    started = undefined;
    expect(['complete', 'error']).toContain(await ended);
    await expect(fetch(`${s.url.replace(/\/graphql$/, '')}/healthz`)).rejects.toThrow();
  });
});

describe('/metrics', () => {
  const metric = (text: string, line: string): number => {
    const found = text.split('\n').find((l) => l.startsWith(line));
    return found ? Number(found.slice(line.length).trim()) : Number.NaN;
  };

  it('moves while a drain runs: operations, shards moved, moves in flight, node policy, move latency', async () => {
    const s = await start({ plugins: [{ name: 'fake', options: { latenciesMs: { cutOver: 300 } } }], operations: { maxConcurrentMoves: 2 } });
    const scrape = async () => {
      const res = await fetch(s.url.replace(/\/graphql$/, '/metrics'));
      expect(res.headers.get('content-type')).toContain('text/plain');
      return res.text();
    };
    const before = await scrape();
    expect(metric(before, 'lockkeeper_operations_started_total{kind="DRAIN"}')).toBe(0);
    expect(metric(before, 'lockkeeper_node_scheduling_policy{node="1",policy="ACTIVE"}')).toBe(1);
    const started = await post(s.url, 'mutation { startNodeDrain(nodeId: "1") { ... on Operation { id } } }');
    const id = started.data.startNodeDrain.id;
    const during = await until(async () => {
      const text = await scrape();
      return metric(text, 'lockkeeper_shards_moved_total{kind="DRAIN"}') >= 1 && metric(text, 'lockkeeper_moves_in_flight{kind="DRAIN"}') > 0
        ? text
        : undefined;
    }, 'a shard moved while others are in flight');
    expect(metric(during, 'lockkeeper_operations_started_total{kind="DRAIN"}')).toBe(1);
    expect(metric(during, 'lockkeeper_node_scheduling_policy{node="1",policy="DRAINING"}')).toBe(1);
    expect(metric(during, 'lockkeeper_moves_in_flight{kind="DRAIN"}')).toBeGreaterThan(0);
    expect(metric(during, 'lockkeeper_shards_moved_total{kind="DRAIN"}')).toBeGreaterThanOrEqual(1);
    const final = await until(async () => {
      const op = (await post(s.url, `{ operation(id: "${id}") { ... on Operation { state counts { moved } } } }`)).data.operation;
      return op.state === 'RUNNING' ? undefined : op;
    }, 'the drain to end');
    const after = await scrape();
    expect(metric(after, 'lockkeeper_operations_finished_total{kind="DRAIN",outcome="SUCCEEDED"}')).toBe(1);
    expect(metric(after, 'lockkeeper_node_scheduling_policy{node="1",policy="PAUSE_FOR_RESTART"}')).toBe(1);
    expect(metric(after, 'lockkeeper_moves_in_flight{kind="DRAIN"}')).toBe(0);
    const moved = metric(after, 'lockkeeper_shards_moved_total{kind="DRAIN"}');
    expect(moved).toBe(final.counts.moved);
    expect(moved).toBeGreaterThan(1);
    expect(metric(after, 'lockkeeper_move_duration_seconds_count{kind="DRAIN"}')).toBe(moved);
  });
});
