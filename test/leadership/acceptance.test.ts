/**
 * Acceptance of high-availability.md §6 with real processes: `lockkeeper simulator` (ha:B1)
 * as one child process, gateway replicas as others (`lockkeeper serve` on the real
 * `kubevirt` plugin against it), one real PostgreSQL database. Leases are injected short
 * through the config. Every wait is for a state (a role in /healthz, an operation's end, an
 * object in the simulated cluster), never a sleep; assertions are about outcomes and order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../support/child-server.ts';
import { everyVmOnce, startHaCluster } from '../support/ha-acceptance.ts';
import { enableMaintenance, HaProcesses, leaderOf, moved, operation, operationEnded, senders, writes } from '../support/ha-processes.ts';
import { postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();

const processes = new HaProcesses();
afterEach(() => processes.stop());

describe.skipIf(skip)(skip ?? 'acceptance with replica processes and the simulator process', () => {
  it(
    'ha:scenario-1, ha:B1, ha:R2, ha:L4: a maintenance started on a stand-by, the leader kill -9ed mid-run twice (three replicas, then two, then one): it ends, every VM has one outcome',
    { timeout: 420_000 },
    async () => {
      const { sim, db, replicas } = await startHaCluster(processes, { prefix: 'lk-ha-accept-', vmsPerNode: 8, migrateMs: 600, outbound: 2 });
      let { leader, epoch } = await leaderOf(replicas);
      const standby = replicas.find((r) => r !== leader)!;
      const id = await enableMaintenance(standby, 'node-1');

      for (let kill = 1; kill <= 2; kill++) {
        // Kill once the run has made progress under this leader (a state, not a time).
        const before = moved(await operation(db, id));
        const op = await until(
          async () => {
            const o = await operation(db, id);
            return moved(o) > before || o.state !== 'RUNNING' ? o : undefined;
          },
          'progress under the leader',
          90_000,
          20,
        );
        if (op.state !== 'RUNNING') break;
        leader.child.kill('SIGKILL');
        await leader.exited;
        ({ leader, epoch } = await leaderOf(replicas, epoch));
      }
      const done = await operationEnded(db, id, 'the maintenance to end');
      expect(done.state).toBe('SUCCEEDED');
      expect(moved(done)).toBe(8);
      await everyVmOnce(sim, 'node-1', 24);
      // Each take-over was one epoch more, each leader's epoch recorded by the database.
      const { rows } = await db.query<{ epoch: number }>(`SELECT "epoch" FROM "LeaderLease"`);
      expect(rows[0]!.epoch).toBe(epoch);
    },
  );

  // Once, in 3 of 4 runs, the frozen leader's migration of the VM in flight was created
  // after SIGCONT: its write had passed the plugin's gate before the freeze and left the
  // process after it; the gate now also checks each connection as it is established
  // (src/cluster/send-gate.ts; proven alone in test/plugins/kubevirt/leader-gate.test.ts).
  // And in a full-suite run no replica took over while the leader was frozen: frozen inside a
  // fenced transaction, it held the lease row's share lock; the server now ends such a
  // transaction after half the lease (idle_in_transaction_session_timeout, ha:L4).
  it(
    'ha:scenario-2, ha:L3: a leader SIGSTOPped past its lease is replaced; after SIGCONT it makes no backend action and no database write, and rejoins as stand-by',
    { timeout: 420_000 },
    async () => {
      const { sim, db, replicas } = await startHaCluster(processes, { prefix: 'lk-ha-stop-', vmsPerNode: 8, migrateMs: 400, outbound: 2, names: ['r1', 'r2'] });
      const { leader: first, epoch } = await leaderOf(replicas);
      const id = await enableMaintenance(first, 'node-1');
      await until(async () => (moved(await operation(db, id)) > 0 ? true : undefined), 'a first migration', 90_000, 20);
      // Under load the lease may have changed hands before the freeze: the epoch the frozen replica holds is its last.
      const frozenEpoch = (await first.health()).epoch ?? epoch;
      first.child.kill('SIGSTOP');
      const { leader: second } = await leaderOf(replicas, frozenEpoch);
      expect(second).not.toBe(first);
      const done = await operationEnded(db, id, 'the maintenance to end under the new leader');
      expect(done.state).toBe('SUCCEEDED');

      // What the database and the cluster hold of Lockkeeper's doing before the frozen leader wakes
      // (the simulator's own controllers may still tidy up: finished migrations can be collected).
      const snapshot = async () => ({
        seq: (await db.query(`SELECT coalesce(max("seq"), 0) AS seq FROM "Event"`)).rows[0].seq,
        updated: (await db.query(`SELECT max("updatedAt") AS at FROM "Operation"`)).rows[0].at?.toISOString() ?? null,
        nodes: ((await sim.get('/api/v1/nodes')) as { items: { metadata: { name: string }; spec: { unschedulable?: boolean; taints?: unknown } }[] }).items.map(
          (n) => `${n.metadata.name}:${n.spec.unschedulable === true}:${JSON.stringify(n.spec.taints ?? [])}`,
        ),
      });
      const migrations = async () =>
        ((await sim.get('/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations')) as { items: { metadata: { name: string } }[] }).items.map(
          (m) => m.metadata.name,
        );
      const before = await snapshot();
      const migrationsBefore = new Set(await migrations());
      const callsBefore = (await writes(sim)).length;
      first.child.kill('SIGCONT');
      await until(async () => ((await first.health().catch(() => null))?.role === 'standby' ? true : undefined), 'the woken replica to stand by', 60_000, 50);
      const { rows } = await db.query<{ epoch: number; address: string }>(`SELECT "epoch", "address" FROM "LeaderLease"`);
      // Under load leadership may change more than once meanwhile; never back to the frozen replica.
      expect(rows[0]!.epoch).toBeGreaterThan(frozenEpoch);
      expect(rows[0]!.address).not.toBe(new URL(first.url).origin);
      // No write of the woken replica reached the database, no migration was created, no node changed.
      expect(await snapshot()).toEqual(before);
      expect((await migrations()).filter((m) => !migrationsBefore.has(m))).toEqual([]);

      // Who sent each write to the API server, in the order it arrived (the simulator's record).
      const sent = await senders(sim);
      const byFirst = sent.filter((s) => s.pid === first.child.pid);
      const bySecond = sent.filter((s) => s.pid === second.child.pid);
      expect(byFirst.length + bySecond.length).toBe(sent.length);
      expect(byFirst.length).toBeGreaterThan(0);
      // The frozen replica never sent at an epoch after the one it held when frozen, nor anything after it woke.
      expect(byFirst.every((s) => s.epoch <= frozenEpoch)).toBe(true);
      expect(sent.slice(callsBefore).filter((s) => s.pid === first.child.pid)).toEqual([]);
      // No request of a deposed leader after a newer epoch began: in arrival order, the epochs never go down.
      const epochs = sent.map((s) => s.epoch);
      expect(epochs).toEqual([...epochs].sort((a, b) => a - b));
      // The epoch that took over from the frozen replica is the second replica's, and only it sent from then on.
      const newEpochBegan = sent.findIndex((s) => s.epoch > frozenEpoch);
      expect(newEpochBegan).toBeGreaterThan(-1);
      expect(sent.slice(newEpochBegan).every((s) => s.pid === second.child.pid)).toBe(true);
      expect((await first.health()).role).toBe('standby');
      await everyVmOnce(sim, 'node-1', 24);
    },
  );
});
