/**
 * vm:V2 and vm:T4 say "with a warning event": besides the plan's and the disable result's
 * warnings, each is an entry of the event log, and so reaches an `eventLog` subscriber over a
 * real graphql-ws connection to a listening server.
 */
import { createClient, type Client } from 'graphql-ws';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TestApp } from '../support/graphql-app.ts';
import { cluster, disable, enable, maintenanceApp, untilPhase, vm } from './harness.ts';

const TYPES = '["VM_STRATEGY_LABEL_INVALID", "VM_RESTARTED_ELSEWHERE"]';

let t: TestApp | undefined;
let client: Client | undefined;
afterEach(async () => {
  await client?.dispose();
  await t?.stop();
  client = undefined;
  t = undefined;
});

const on1 = (name: string, extra: object = {}) => ({ namespace: 'default', name, nodeId: '1', ...extra });

/** Subscribes to the warning events from the start of the log (`after: 0` replays, so nothing is missed). */
async function subscribeWarnings(app: TestApp) {
  const { port } = await app.app.start(0, '127.0.0.1');
  client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 });
  const seen: { seq: number; type: string; nodeId: string | null; operationId: string | null; payload: any }[] = [];
  client.subscribe(
    { query: `subscription { eventLog(after: 0, types: ${TYPES}) { seq type nodeId operationId payload } }` },
    { next: (m) => seen.push((m.data as any).eventLog), error: () => {}, complete: () => {} },
  );
  /** Waits (real time: the subscription polls the log) until `n` warning events have arrived. */
  const first = async (n: number) => {
    const give = Date.now() + 120_000;
    while (seen.length < n) {
      if (Date.now() > give) throw new Error(`only ${seen.length} of ${n} warning events arrived`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return seen.slice(0, n);
  };
  return { seen, first };
}

async function loggedWarnings(app: TestApp) {
  const res = await app.gql(`{ eventLog(after: 0, types: ${TYPES}) { events { seq type nodeId operationId payload } } }`);
  return res.data.eventLog.events;
}

describe('warning events', () => {
  it('vm:V2: enable logs one VM_STRATEGY_LABEL_INVALID per VM with an invalid label, and the subscription delivers it', async () => {
    t = await maintenanceApp(
      cluster([on1('odd', { maintenanceStrategyLabel: 'shutdown-please' }), on1('proper', { maintenanceStrategyLabel: 'Migrate' }), on1('unlabelled')]),
    );
    const live = await subscribeWarnings(t);
    const op = await enable(t, '1');
    expect(op.__typename).toBe('Operation');
    const [event] = await live.first(1);
    const expected = {
      type: 'VM_STRATEGY_LABEL_INVALID',
      nodeId: '1',
      operationId: op.id,
      payload: {
        vm: 'default/odd',
        label: 'shutdown-please',
        treatedAs: 'Migrate',
        warning: 'VM default/odd has an invalid maintenance strategy "shutdown-please"; treated as Migrate',
      },
    };
    expect(event).toMatchObject(expected);
    await untilPhase(t, '1', 'COMPLETED');
    // Only the invalid one; it still migrated (it never blocks).
    expect(await loggedWarnings(t)).toEqual([{ seq: event!.seq, ...expected }]);
    expect((await vm(t, 'default/odd')).nodeId).not.toBe('1');
    expect(live.seen).toHaveLength(1);
  });

  it('vm:T4: a VM restarted away from its recorded node logs VM_RESTARTED_ELSEWHERE, delivered to the subscription; one restarted at home logs nothing', async () => {
    t = await maintenanceApp(cluster([on1('home', { maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' })]));
    const live = await subscribeWarnings(t);
    // First round: node 1 can take it back, so no warning.
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    expect((await disable(t, '1')).warnings).toEqual([]);
    expect(await vm(t, 'default/home')).toMatchObject({ nodeId: '1', status: 'Running' });
    expect(await loggedWarnings(t)).toEqual([]);

    // Second round: node 1 is down at disable, so the VM restarts on node 2, with the warning event.
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    await t.cluster.simulation.setNodeOnline('1', false);
    const result = await disable(t, '1');
    expect(result.restartedVmIds).toEqual(['default/home']);
    const [event] = await live.first(1);
    const expected = {
      type: 'VM_RESTARTED_ELSEWHERE',
      nodeId: '1',
      operationId: null,
      payload: {
        vm: 'default/home',
        recordedNode: 'node-1',
        to: '2',
        warning: 'VM default/home restarts on node 2, not on node-1: node node-1 cannot take it',
      },
    };
    expect(event).toMatchObject(expected);
    expect(result.warnings).toContain(expected.payload.warning);
    expect(await loggedWarnings(t)).toEqual([{ seq: event!.seq, ...expected }]);
    expect((await vm(t, 'default/home')).nodeId).toBe('2');
  });
});
