/**
 * ha:scenario-1's ownership check on the pageserver side, with real processes: `lockkeeper
 * simulator --tenants` serving pageservers and the compute hook (one request log, in arrival
 * order, each request with the `x-lockkeeper-sender` it came with), three `lockkeeper serve`
 * replicas on the real `pageserver` plugin and one PostgreSQL. A drain started on a stand-by is
 * run by the leader, which is `kill -9`ed once a shard has moved; the next leader finishes it.
 * Every request names its sender; every write names a leader at an epoch; in arrival order the
 * epochs never go down (no request of a deposed leader after a new epoch began) and each epoch
 * is one process's. Waits are for states, never for lengths of time.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postGraphQL, until } from '../support/child-server.ts';
import { HaProcesses, leaderOf, moved, nodesActive, operation, operationEnded, pageserverRequests, senderOf } from '../support/ha-processes.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
const processes = new HaProcesses();
afterEach(() => processes.stop());

/** 60 unsharded tenants round-robin over three pageservers: 20 on pageserver 1. */
const ON_NODE_1 = 20;

describe.skipIf(skip)(skip ?? 'who sent each pageserver and compute hook request', () => {
  it(
    'ha:scenario-1, ha:L3, ha:L8: a drain across a kill -9 of the leader; every pageserver and hook request names its sender, no deposed leader sends after a new epoch began',
    { timeout: 300_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lk-ha-ps-senders-'));
      // Each location_config answered after 100 ms, one cut-over at a time: the drain outlasts the kill.
      const sim = await processes.simulator(dir, [
        '--nodes',
        '3',
        '--vms-per-node',
        '0',
        '--separate-hosts',
        '--tenants',
        '60',
        '--shards-per-tenant',
        '1',
        '--location-config-ms',
        '100',
      ]);
      const config = HaProcesses.config(dir, sim.config, { operations: { maxConcurrentMoves: 1 } });
      const url = await createPostgresDatabase();
      const db = await processes.database(url);
      const replicas = [];
      for (const name of ['r1', 'r2', 'r3']) replicas.push(await processes.replica(name, config, dir, url));
      let { leader, epoch } = await leaderOf(replicas);
      const standby = replicas.find((r) => r !== leader)!;
      await nodesActive(standby, ['1', '2', '3']);
      const started = await postGraphQL(
        standby.url,
        'mutation { r: startNodeDrain(nodeId: "1") { __typename ... on Operation { id } ... on Error { message } } }',
      );
      expect(started.r, started.r.message).toMatchObject({ __typename: 'Operation' });
      const id = started.r.id as string;

      await until(async () => (moved(await operation(db, id)) > 0 ? true : undefined), 'a shard moved under the first leader', 120_000, 20);
      const killed = { pid: leader.child.pid!, epoch };
      leader.child.kill('SIGKILL');
      await leader.exited;
      ({ leader, epoch } = await leaderOf(replicas, epoch));
      const done = await operationEnded(db, id, 'the drain to end under the next leader');
      expect(done.state).toBe('SUCCEEDED');
      expect(moved(done)).toBe(ON_NODE_1);

      const requests = await pageserverRequests(sim);
      expect(requests.filter((r) => r.sender === undefined).map((r) => `${r.source} ${r.method} ${r.path}`)).toEqual([]);
      const writes = requests.filter((r) => r.method !== 'GET');
      expect(writes.filter((r) => senderOf(r) === null).map((r) => `${r.source} ${r.method} ${r.path} from ${r.sender}`)).toEqual([]);
      const sent = requests.map(senderOf).filter((s) => s !== null);
      const epochs = sent.map((s) => s.epoch);
      expect(epochs).toEqual([...epochs].sort((a, b) => a - b));
      const pidsOf = new Map<number, Set<number>>();
      for (const s of sent) pidsOf.set(s.epoch, (pidsOf.get(s.epoch) ?? new Set()).add(s.pid));
      expect([...pidsOf].filter(([, pids]) => pids.size !== 1)).toEqual([]);
      expect(sent.filter((s) => s.pid === killed.pid && s.epoch !== killed.epoch)).toEqual([]);
      // Both leaders cut over and told the computes, each under its own epoch.
      for (const e of [killed.epoch, epoch]) {
        const under = writes.filter((r) => senderOf(r)!.epoch === e);
        expect(
          under.some((r) => r.source.startsWith('node ') && r.method === 'PUT'),
          `a location_config at epoch ${e}`,
        ).toBe(true);
        expect(
          under.some((r) => r.source === 'hook'),
          `a compute notification at epoch ${e}`,
        ).toBe(true);
      }
    },
  );
});
