/**
 * ha:scenario-4 with replica processes (ha:R3): `lockkeeper simulator` (Kubernetes + KubeVirt,
 * pageservers) and three `lockkeeper serve` replicas on one PostgreSQL. Fifty starts on one
 * node sent at once over HTTP, spread over the three replicas: the database admits exactly
 * one, and the 49 others answer a typed ConflictError naming it. The same for a drain (the
 * pageserver plugin's shards) and for a maintenance. Outcomes only, never durations.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postGraphQL } from '../support/child-server.ts';
import { HaProcesses, leaderOf, nodesActive, type ReplicaProcess } from '../support/ha-processes.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
const processes = new HaProcesses();
afterEach(() => processes.stop());

/** `count` requests of `mutation` at once, round-robin over the replicas; each answer's type and operation id. */
async function race(replicas: ReplicaProcess[], mutation: string, count: number) {
  const answers = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const data = await postGraphQL(
        replicas[i % replicas.length]!.url,
        `mutation { r: ${mutation} { __typename ... on Operation { id } ... on ConflictError { operationId } ... on Error { message } } }`,
      );
      return data.r as { __typename: string; id?: string; operationId?: string; message?: string };
    }),
  );
  const accepted = answers.filter((a) => a.__typename === 'Operation');
  const conflicts = answers.filter((a) => a.__typename === 'ConflictError');
  return { accepted, conflicts, others: answers.filter((a) => !['Operation', 'ConflictError'].includes(a.__typename)) };
}

describe.skipIf(skip)(skip ?? 'racing starts across replica processes', () => {
  it(
    'ha:scenario-4, ha:R3: 50 concurrent drains of one node over three replicas, then 50 concurrent maintenances of another: one accepted each, 49 typed ConflictError naming it',
    { timeout: 300_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lk-ha-race-'));
      const sim = await processes.simulator(dir, [
        '--nodes',
        '3',
        '--vms-per-node',
        '4',
        '--migrate-ms',
        '2000',
        '--separate-hosts',
        '--tenants',
        '6',
        '--shards-per-tenant',
        '1',
      ]);
      const config = HaProcesses.config(dir, sim.config, {});
      const url = await createPostgresDatabase();
      const db = await processes.database(url);
      const replicas = [];
      for (const name of ['r1', 'r2', 'r3']) replicas.push(await processes.replica(name, config, dir, url));
      await leaderOf(replicas);
      for (const r of replicas) await nodesActive(r, ['1', '2', '3', 'node-3']);

      const drains = await race(replicas, 'startNodeDrain(nodeId: "1")', 50);
      expect(drains.others).toEqual([]);
      expect(drains.accepted).toHaveLength(1);
      expect(drains.conflicts).toHaveLength(49);
      expect(new Set(drains.conflicts.map((c) => c.operationId))).toEqual(new Set([drains.accepted[0]!.id]));

      const maintenances = await race(replicas, 'enableMaintenanceMode(nodeId: "node-3")', 50);
      expect(maintenances.others).toEqual([]);
      expect(maintenances.accepted).toHaveLength(1);
      expect(maintenances.conflicts).toHaveLength(49);
      expect(new Set(maintenances.conflicts.map((c) => c.operationId))).toEqual(new Set([maintenances.accepted[0]!.id]));

      // The database holds what the answers say: one operation per node.
      const { rows } = await db.query<{ kind: string; nodeId: string }>(`SELECT "kind", "nodeId" FROM "Operation" ORDER BY "kind"`);
      expect(rows).toEqual([
        { kind: 'DRAIN', nodeId: '1' },
        { kind: 'MAINTENANCE', nodeId: 'node-3' },
      ]);
    },
  );
});
