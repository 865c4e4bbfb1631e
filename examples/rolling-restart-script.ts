/**
 * Rolling restart of every storage node, one at a time, the way an operator patches a
 * cluster: drain → wait for PAUSE_FOR_RESTART → restart → wait until the node is back and
 * ACTIVE → fill → wait. Progress is followed over GraphQL subscriptions (graphql-ws).
 *
 *   npx tsx examples/rolling-restart-script.ts [http://127.0.0.1:4000/graphql]
 *
 * It stops, without restarting, at a drain that did not end SUCCEEDED or that left anything
 * on its node — shards it skipped or failed to cut over, VMs still running there (the drain's
 * `remaining`, the same list as the node's `remainingWorkloads`): SUCCEEDED means every
 * shard has an outcome, not that the node may be restarted. It then exits 5 and names them.
 *
 * The restart uses the simulated cluster's `simulation.restartNode`; against real nodes,
 * replace `restartNode` below with your own reboot step.
 */
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

type Log = (line: string) => void;

interface NodeState {
  id: string;
  availability: string;
  schedulingPolicy: string;
}

async function request<T>(url: string, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  const body = (await res.json()) as { data?: T; errors?: { message: string }[] };
  if (body.errors?.length) throw new Error(body.errors.map((e) => e.message).join('; '));
  return body.data as T;
}

/** Resolves with the first node state that satisfies `done`, from the nodeChanged subscription. */
function waitForNode(client: Client, nodeId: string, done: (n: NodeState) => boolean): { ready: Promise<void>; reached: Promise<NodeState> } {
  let stop = () => {};
  let markReady = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const reached = new Promise<NodeState>((resolve, reject) => {
    stop = client.subscribe<{ nodeChanged: NodeState }>(
      { query: `subscription($id: ID) { nodeChanged(nodeId: $id) { id availability schedulingPolicy } }`, variables: { id: nodeId } },
      {
        next: ({ data }) => {
          if (data && done(data.nodeChanged)) resolve(data.nodeChanged);
        },
        error: reject,
        complete: () => reject(new Error('subscription ended')),
      },
    );
    // graphql-ws gives no "subscribed" signal; one round trip later the server has it.
    setTimeout(markReady, 100);
  });
  return { ready, reached: reached.finally(() => stop()) };
}

const PROGRESS = `subscription($id: ID!) { operationProgress(id: $id) { operation {
  state error counts { moved skipped failed total } etaSeconds waitingOn { description } remaining { kind id reason message } } } }`;

interface Remaining {
  kind: string;
  id: string;
  reason: string;
  message: string;
}

/** The node still serves workloads: restarting it would interrupt them. */
export class NotSafeToRestart extends Error {
  constructor(
    readonly nodeId: string,
    readonly remaining: Remaining[],
  ) {
    super(`node ${nodeId} is not safe to restart: ${remaining.map((w) => `${w.kind.toLowerCase()} ${w.id} (${w.reason})`).join(', ')}`);
  }
}

/** Follows an operation until it ends; returns its final state and what it left on its node. */
function follow(client: Client, id: string, label: string, log: Log): Promise<{ state: string; remaining: Remaining[] }> {
  return new Promise((resolve, reject) => {
    let last = '';
    client.subscribe<{
      operationProgress: {
        operation: {
          state: string;
          error: string | null;
          counts: Record<string, number>;
          etaSeconds: number | null;
          waitingOn: { description: string } | null;
          remaining: Remaining[] | null;
        };
      };
    }>(
      { query: PROGRESS, variables: { id } },
      {
        next: ({ data }) => {
          const op = data!.operationProgress.operation;
          const c = op.counts;
          const eta = op.etaSeconds === null ? '' : `, eta ${op.etaSeconds.toFixed(1)} s`;
          const line = `  ${label}: ${op.state} ${c.moved}/${c.total} moved, ${c.skipped} skipped, ${c.failed} failed${eta}`;
          if (line !== last) log(line);
          last = line;
          if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(op.state))
            resolve({ state: op.error ? `${op.state} (${op.error})` : op.state, remaining: op.remaining ?? [] });
        },
        error: reject,
        complete: () => {},
      },
    );
  });
}

async function start(url: string, mutation: 'startNodeDrain' | 'startNodeFill', nodeId: string): Promise<string> {
  const data = await request<{ r: { __typename: string; id?: string; message?: string } }>(
    url,
    `mutation($id: ID!) { r: ${mutation}(nodeId: $id, reason: "rolling restart") { __typename ... on Operation { id } ... on Error { message } } }`,
    { id: nodeId },
  );
  if (data.r.__typename !== 'Operation') throw new Error(`${mutation} on node ${nodeId} refused: ${data.r.__typename}: ${data.r.message}`);
  return data.r.id!;
}

async function restartNode(url: string, nodeId: string): Promise<void> {
  await request(url, `mutation($id: ID!) { simulation { restartNode(nodeId: $id) { __typename } } }`, { id: nodeId });
}

export async function rollingRestart(url: string, log: Log = console.log): Promise<void> {
  const client = createClient({ url: url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 3 });
  try {
    const { nodes } = await request<{ nodes: { edges: { node: { id: string; name: string } }[] } }>(
      url,
      `{ nodes(role: "storage", first: 1000) { edges { node { id name } } } }`,
    );
    log(`rolling restart of ${nodes.edges.length} storage node(s)`);
    for (const { node } of nodes.edges) {
      log(`node ${node.name} (${node.id}): drain`);
      const paused = waitForNode(client, node.id, (n) => n.schedulingPolicy === 'PAUSE_FOR_RESTART');
      await paused.ready;
      const drain = await start(url, 'startNodeDrain', node.id);
      const drained = await follow(client, drain, 'drain', log);
      if (drained.state !== 'SUCCEEDED') throw new Error(`drain of node ${node.id} ended ${drained.state}`);
      // SUCCEEDED is not "safe": skipped or failed shards, and VMs, are still served by the node.
      if (drained.remaining.length) {
        for (const w of drained.remaining) log(`  still on node ${node.id}: ${w.kind.toLowerCase()} ${w.id}: ${w.reason}: ${w.message}`);
        throw new NotSafeToRestart(node.id, drained.remaining);
      }
      await paused.reached;
      log(`node ${node.name}: PAUSE_FOR_RESTART, restarting`);
      const back = waitForNode(client, node.id, (n) => n.availability === 'ACTIVE' && n.schedulingPolicy === 'ACTIVE');
      await back.ready;
      await restartNode(url, node.id);
      await back.reached;
      log(`node ${node.name}: back and ACTIVE, fill`);
      const fill = await start(url, 'startNodeFill', node.id);
      const filled = await follow(client, fill, 'fill', log);
      if (filled.state !== 'SUCCEEDED') throw new Error(`fill of node ${node.id} ended ${filled.state}`);
    }
    log('rolling restart done');
  } finally {
    await client.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  rollingRestart(process.argv[2] ?? 'http://127.0.0.1:4000/graphql').catch((e: unknown) => {
    console.error(`rolling restart stopped: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(e instanceof NotSafeToRestart ? 5 : 1);
  });
}
