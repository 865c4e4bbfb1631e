/**
 * Acceptance 5 of high-availability.md §6 with real processes: a graphql-ws client (the
 * `graphql-ws` package over `ws`, as an operator's script would use it) follows the `eventLog`
 * subscription on a stand-by while the leader runs a VM maintenance against `lockkeeper
 * simulator`. Its replica is kill -9ed mid-run; the client connects to another live replica
 * and resumes after the last `seq` it saw (the subscription's `after` cursor). In the end what
 * it received is compared with the Event table in PostgreSQL. Every wait is for a state (a
 * role, an event received, the operation's end), never a sleep.
 */
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../support/child-server.ts';
import { startHaCluster } from '../support/ha-acceptance.ts';
import { enableMaintenance, HaProcesses, leaderOf, operation, operationEnded, type ReplicaProcess } from '../support/ha-processes.ts';
import { postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
/** VMs of node-1 the maintenance moves, one at a time: enough that the kill falls well inside the run. */
const VMS = 20;

const processes = new HaProcesses();
const followers: ResumingFollower[] = [];
afterEach(async () => {
  for (const f of followers.splice(0)) await f.stop();
  await processes.stop();
});

interface Received {
  seq: number;
  type: string;
  operationId: string | null;
}

/**
 * An `eventLog` follower that resumes: on each connection it subscribes after the last `seq` it
 * received (from the start of the log on the first); when the connection fails it connects to
 * the next replica of `order` (the last one again when none is left). Records which replica
 * each event came through.
 */
class ResumingFollower {
  readonly events: (Received & { via: string })[] = [];
  readonly connections: string[] = [];
  readonly errors: string[] = [];
  private last = 0;
  private client: Client | null = null;
  private stopped = false;

  constructor(private readonly order: ReplicaProcess[]) {
    followers.push(this);
  }

  start(): void {
    if (this.stopped) return;
    const replica = this.order[Math.min(this.connections.length, this.order.length - 1)]!;
    const url = new URL('/graphql', replica.url);
    url.protocol = 'ws:';
    const client = createClient({ url: url.toString(), webSocketImpl: WebSocket, retryAttempts: 0 });
    this.client = client;
    this.connections.push(replica.name);
    client.subscribe<{ eventLog: Received }>(
      { query: 'subscription Follow($after: Int) { eventLog(after: $after) { seq type operationId } }', variables: { after: this.last } },
      {
        next: ({ data, errors }) => {
          if (errors) return void this.errors.push(JSON.stringify(errors));
          this.last = data!.eventLog.seq;
          this.events.push({ ...data!.eventLog, via: replica.name });
        },
        // The replica went away (kill -9: the socket closed without a close frame): resume elsewhere.
        error: () => this.again(client),
        complete: () => this.again(client),
      },
    );
  }

  private again(client: Client): void {
    void client.dispose();
    this.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.client?.dispose();
  }
}

describe.skipIf(skip)(skip ?? 'an event-log subscriber across replicas', () => {
  it(
    'ha:scenario-5, ha:E1, ha:E2, ha:R1: a graphql-ws client on a stand-by follows the maintenance the leader runs; its replica kill -9ed mid-run, it resumes from its cursor on another and has every event exactly once, in seq order',
    { timeout: 420_000 },
    async () => {
      const { db, replicas } = await startHaCluster(processes, { prefix: 'lk-ha-subscriber-', vmsPerNode: VMS, migrateMs: 600, outbound: 1 });
      const { leader } = await leaderOf(replicas);
      const [first, second] = replicas.filter((r) => r !== leader) as [ReplicaProcess, ReplicaProcess];
      expect((await first.health()).role).toBe('standby');

      // First on one stand-by; once that is gone, on the other.
      const follower = new ResumingFollower([first, second]);
      follower.start();
      // Started on the other stand-by (any replica admits it: ha:R2), run by the leader.
      const id = await enableMaintenance(second, 'node-1');
      const ofOperation = () => follower.events.filter((e) => e.operationId === id);

      // Mid-run: the client has seen a VM of the maintenance moved, and more are to come.
      await until(() => (ofOperation().some((e) => e.type === 'VM_MIGRATE_MOVED') ? true : undefined), 'a first VM moved, seen by the client', 90_000, 20);
      expect((await operation(db, id)).state).toBe('RUNNING');
      first.child.kill('SIGKILL');
      await first.exited;

      const done = await operationEnded(db, id, 'the maintenance to end');
      expect(done.state).toBe('SUCCEEDED');
      const { rows: last } = await db.query<{ seq: number }>(`SELECT max("seq") AS seq FROM "Event"`);
      const lastSeq = last[0]!.seq;
      await until(() => (follower.events.some((e) => e.seq >= lastSeq) ? true : undefined), `the client to reach seq ${lastSeq}`, 90_000, 20);

      // Exactly the table up to there, in seq order: no gap, no repeat (ha:E2), across the two
      // replicas (ha:E1). Read again now, so that a row committed late below lastSeq counts too.
      const { rows: table } = await db.query<Received>(`SELECT "seq", "type", "operationId" FROM "Event" WHERE "seq" <= $1 ORDER BY "seq"`, [lastSeq]);
      expect(follower.errors).toEqual([]);
      const seen = follower.events.map(({ seq, type, operationId }) => ({ seq, type, operationId }));
      expect(seen.filter((e) => e.seq <= lastSeq)).toEqual(table);
      expect(seen.map((e) => e.seq)).toEqual([...new Set(seen.map((e) => e.seq))].sort((a, b) => a - b));
      expect(follower.connections).toEqual(['r1', 'r2', 'r3'].filter((n) => n !== leader.name));
      // The kill fell inside the run: the operation's events came through both stand-bys.
      const moves = ofOperation().filter((e) => e.type === 'VM_MIGRATE_MOVED');
      expect(moves).toHaveLength(VMS);
      expect(new Set(moves.map((e) => e.via))).toEqual(new Set([first.name, second.name]));
      // The end reached the client: the operation's last commit holds its end and the node's phase (COMPLETED).
      expect(
        ofOperation()
          .slice(-2)
          .map((e) => e.type)
          .sort(),
      ).toEqual(['MAINTENANCE_PHASE_CHANGED', 'OPERATION_FINISHED']);
    },
  );
});
