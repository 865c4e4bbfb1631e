/**
 * Rolling restart of every storage node as one call: a DRAIN_FILL rollout (spec rollouts)
 * drains each node, waits for its restart, fills it, and only then takes the next one,
 * never more than one node out of service. Progress comes over the `operationProgress`
 * subscription (graphql-ws). The script's only job besides watching is the restart
 * itself, which Lockkeeper leaves to the operator's tooling (restart WAIT_FOR_REATTACH):
 * here the simulated cluster's `simulation.restartNode`; against real nodes, replace
 * `restartNode` below with your reboot step (or start the rollout with restart: CONFIRM
 * and call continueRollout when a node is back).
 *
 *   npx tsx examples/rolling-restart.ts [http://127.0.0.1:4000/graphql]
 *
 * Exits 0 when the rollout SUCCEEDED, 4 when it PAUSED and needs a person (it says why:
 * a failed node step, or a node that still serves workloads — the rollout never hands such a
 * node over for its restart, rollout:O6), 1 otherwise. `examples/rolling-restart-script.ts` is the same loop written by hand.
 */
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

type Log = (line: string) => void;

async function request<T>(url: string, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  const body = (await res.json()) as { data?: T; errors?: { message: string }[] };
  if (body.errors?.length) throw new Error(body.errors.map((e) => e.message).join('; '));
  return body.data as T;
}

const START = `mutation { r: startRollout(input: { selector: { roles: ["storage"] }, action: DRAIN_FILL, order: ZONE_BY_ZONE, reason: "rolling restart" }) {
  __typename ... on Operation { id rollout { waves { nodeIds } } } ... on Error { code message } } }`;

const PROGRESS = `subscription($id: ID!) { operationProgress(id: $id) { operation {
  state error counts { moved total } etaSeconds waitingOn { description }
  rollout { currentWave nodes { nodeId phase blockers { id reasons } } } } } }`;

interface Progress {
  state: string;
  error: string | null;
  counts: { moved: number; total: number };
  etaSeconds: number | null;
  waitingOn: { description: string } | null;
  rollout: { currentWave: number | null; nodes: { nodeId: string; phase: string; blockers: { id: string; reasons: string[] }[] }[] };
}

async function restartNode(url: string, nodeId: string): Promise<void> {
  await request(url, `mutation($id: ID!) { simulation { restartNode(nodeId: $id) { __typename } } }`, { id: nodeId });
}

/** Starts the rollout and follows it to its end; resolves with its final state. */
export async function rollingRestart(url: string, log: Log = console.log): Promise<string> {
  const { r } = await request<{ r: { __typename: string; id?: string; message?: string; rollout?: { waves: { nodeIds: string[] }[] } } }>(url, START);
  if (r.__typename !== 'Operation') throw new Error(`startRollout refused: ${r.__typename}: ${r.message}`);
  log(`rollout ${r.id} started: waves ${r.rollout!.waves.map((w) => w.nodeIds.join('+')).join(' → ')}`);
  const client = createClient({ url: url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 3 });
  const restarted = new Set<string>();
  try {
    return await new Promise<string>((resolve, reject) => {
      let last = '';
      client.subscribe<{ operationProgress: { operation: Progress } }>(
        { query: PROGRESS, variables: { id: r.id } },
        {
          next: ({ data }) => {
            const op = data!.operationProgress.operation;
            const eta = op.etaSeconds === null ? '' : `, eta ${op.etaSeconds.toFixed(0)} s`;
            const line = `${op.state} ${op.counts.moved}/${op.counts.total} nodes${eta}${op.waitingOn ? ` — ${op.waitingOn.description}` : ''}`;
            if (line !== last) log(line);
            last = line;
            for (const n of op.rollout.nodes) {
              if (n.phase !== 'WAITING_FOR_RESTART' || restarted.has(n.nodeId)) continue;
              restarted.add(n.nodeId);
              log(`node ${n.nodeId} drained: restarting it`);
              restartNode(url, n.nodeId).catch(reject);
            }
            if (op.state === 'PAUSED') {
              // rollout:O6: a node that would leave workloads without service is not handed over for its restart.
              for (const n of op.rollout.nodes) for (const b of n.blockers) log(`  node ${n.nodeId} not restarted: ${b.id}: ${b.reasons.join('; ')}`);
            }
            if (op.state === 'PAUSED' || ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(op.state)) resolve(op.state);
          },
          error: reject,
          complete: () => {},
        },
      );
    });
  } finally {
    await client.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  rollingRestart(process.argv[2] ?? 'http://127.0.0.1:4000/graphql').then(
    (state) => {
      console.log(state === 'SUCCEEDED' ? 'rolling restart done' : `rolling restart ${state}`);
      process.exit(state === 'SUCCEEDED' ? 0 : state === 'PAUSED' ? 4 : 1);
    },
    (e: unknown) => {
      console.error(`rolling restart failed: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(1);
    },
  );
}
