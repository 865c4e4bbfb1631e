import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postGraphQL, spawnLockkeeper, until } from '../support/child-server.ts';

let server: ReturnType<typeof spawnLockkeeper> | undefined;
afterEach(() => {
  server?.child.kill('SIGKILL');
});

const ROLLOUT = (id: string) =>
  `{ operation(id: "${id}") { ... on Operation { state error rollout { currentWave nodes { nodeId phase operations { id kind } } } } } }`;

/** The operator's reboot automation: restarts (once) each node the rollout hands over. */
async function restartHandedOver(url: string, id: string, restarted: Set<string>) {
  const op = (await postGraphQL(url, ROLLOUT(id))).operation;
  for (const n of op.rollout.nodes) {
    if (n.phase !== 'WAITING_FOR_RESTART' || restarted.has(n.nodeId)) continue;
    restarted.add(n.nodeId);
    await postGraphQL(url, `mutation { simulation { restartNode(nodeId: "${n.nodeId}") { __typename } } }`);
  }
  return op;
}

describe('kill -9 during a rollout (rollout:scenario-4, rollout:O9)', () => {
  it('after a kill during the second wave the restarted gateway finishes the rollout, with one maintenance per node', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lk-kill-rollout-'));
    writeFileSync(
      join(dir, 'lockkeeper.config.json'),
      JSON.stringify({
        plugins: [
          {
            name: 'fake',
            options: {
              statePath: 'cluster-state.json',
              latenciesMs: { migrate: 300, stop: 100, start: 100, cordon: 20 },
              restartDelayMs: 300,
              heartbeatIntervalMs: 100,
              topology: {
                nodes: ['1', '2', '3'].map((id) => ({ id, roles: ['worker'] })),
                vms: ['1', '2', '3'].flatMap((n) => [0, 1].map((j) => ({ namespace: 'prod', name: `vm-${n}-${j}`, nodeId: n }))),
              },
            },
          },
        ],
      }),
    );
    server = spawnLockkeeper({}, dir);
    await server.ready;
    const started = await postGraphQL(
      server.url,
      'mutation { startRollout(input: { nodes: ["1", "2", "3"], action: MAINTENANCE, reason: "kill test" }) { ... on Operation { id } } }',
    );
    const id: string = started.startRollout.id;
    const restarted = new Set<string>();
    // Node 2 waits in WAITING_FOR_RESTART until this automation restarts it, so the kill lands in
    // the second wave however slowly the polls come (a loaded machine can miss the short
    // ENTERING_MAINTENANCE window).
    await until(async () => {
      const op = (await postGraphQL(server!.url, ROLLOUT(id))).operation;
      if (op.rollout.currentWave === 2 && ['ENTERING_MAINTENANCE', 'WAITING_FOR_RESTART'].includes(op.rollout.nodes[1].phase)) return op;
      await restartHandedOver(server!.url, id, restarted);
      return undefined;
    }, 'the second wave');
    server.child.kill('SIGKILL');
    expect((await server.exited).signal).toBe('SIGKILL');

    server = spawnLockkeeper({}, dir);
    await server.ready;
    expect(server.stdout()).toContain(`resuming rollout ${id}`);
    const done = await until(
      async () => {
        const op = await restartHandedOver(server!.url, id, restarted);
        return op.state === 'RUNNING' ? undefined : op;
      },
      'the rollout to finish',
      60_000,
    );
    expect(done).toMatchObject({ state: 'SUCCEEDED', error: null });
    const data = await postGraphQL(
      server.url,
      '{ operations(kind: MAINTENANCE, first: 100) { edges { node { id nodeId state } } } vms(first: 100) { edges { node { id status } } } }',
    );
    const maintenances = data.operations.edges.map((e: any) => e.node);
    // One maintenance per node, each SUCCEEDED, and the one each node step recorded.
    expect(maintenances.map((m: any) => m.nodeId).sort()).toEqual(['1', '2', '3']);
    expect(maintenances.every((m: any) => m.state === 'SUCCEEDED')).toBe(true);
    for (const n of done.rollout.nodes) {
      expect(n.phase).toBe('DONE');
      expect(n.operations.filter((o: any) => o.kind === 'MAINTENANCE').map((o: any) => o.id)).toEqual([
        maintenances.find((m: any) => m.nodeId === n.nodeId).id,
      ]);
    }
    expect([...restarted].sort()).toEqual(['1', '2', '3']);
    expect(data.vms.edges.filter((e: any) => e.node.status !== 'RUNNING')).toEqual([]);
  });
});
