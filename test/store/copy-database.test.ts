/**
 * Acceptance 7 of spec high-availability: `lockkeeper db copy` moves a SQLite installation
 * (operations, steps, tracking, tokens, audit, events, policies) to an empty PostgreSQL
 * database, refusing a non-empty target; a gateway started on the copy resumes what was
 * running.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { TopologySpec } from '../../plugins/fake/index.ts';
import { Prisma } from '../../src/store/generated/client.ts';
import { COPY_ORDER, copyDatabase, NOT_COPIED } from '../../src/store/copy-database.ts';
import { openDatabase } from '../../src/store/database.ts';
import { PrismaPluginStore } from '../../src/store/plugin-store.ts';
import { driveUntil, mutate, settle } from '../operations/drive.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
let apps: TestApp[] = [];
afterEach(async () => {
  for (const a of apps) await a.stop().catch(() => {});
  apps = [];
});

const topology: TopologySpec = {
  nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
  shards: Array.from({ length: 8 }, (_, i) => ({ tenantId: 't', shardNumber: i, shardCount: 8, attachedNodeId: '1', secondaries: [{ nodeId: '2' }] })),
};

describe('db copy', () => {
  it('copies every model but the leader lease (a new table must be placed in COPY_ORDER or NOT_COPIED)', () => {
    expect([...COPY_ORDER, ...NOT_COPIED].sort()).toEqual(Object.values(Prisma.ModelName).sort());
  });

  it("carries the plugins' intent and generations over, so the copy continues them and never issues one twice (neon:C4)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lk-copy-'));
    const source = await openDatabase({ url: `file:${join(dir, 'from.db')}` });
    const store = new PrismaPluginStore(source.prisma, 'pageserver');
    await store.createShards([{ id: 's', generation: 7, generationNodeId: '2', intent: { attachedNodeId: '2' } }]);
    expect(await store.incrementGeneration('s', '3')).toBe(8);
    await source.close();
    const result = await copyDatabase(`file:${join(dir, 'from.db')}`, `file:${join(dir, 'to.db')}`);
    expect(result.rows).toMatchObject({ PluginShard: 1 });
    const target = await openDatabase({ url: `file:${join(dir, 'to.db')}` });
    try {
      const copied = new PrismaPluginStore(target.prisma, 'pageserver');
      expect((await copied.shards()).map((x) => [x.id, x.generation, x.generationNodeId])).toEqual([['s', 8, '3']]);
      expect(await copied.incrementGeneration('s', '1')).toBe(9);
    } finally {
      await target.close();
    }
  });

  it.skipIf(skip)(
    'moves a SQLite installation with a drain in flight to PostgreSQL; the gateway on the copy resumes it; a non-empty target is refused',
    async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'lk-copy-')), 'lockkeeper.db');
      const a = await createTestApp({ topology, latenciesMs: { cutOver: 1000 }, settings: { maxConcurrentMoves: 2 }, databaseFile: file });
      apps.push(a);
      expect((await a.gql('mutation { configureNode(nodeId: "3", policy: PAUSE) { __typename } }')).data.configureNode.__typename).toBe('ClusterNode');
      const op = await mutate(a, 'startNodeDrain', '1');
      await driveUntil(a, () => a.app.storage.activeOperation('1')!.counts.moved >= 2);
      // (The first token turns authentication on: made last.)
      await a.app.auth.createToken({ name: 'ops', scope: 'operator', expiresIn: null, createdBy: 'test' });
      // The gateway stops (its cluster goes on); its database is copied.
      await a.app.operations.shutdown();
      const before = {
        events: await a.db.prisma.event.findMany({ orderBy: { seq: 'asc' } }),
        audit: await a.db.prisma.auditEntry.count(),
        steps: await a.db.prisma.operationStep.count(),
      };
      await a.db.close();
      apps = [];

      const url = await createPostgresDatabase();
      const result = await copyDatabase(`file:${file}`, url);
      expect(result.rows).toMatchObject({
        Operation: 1,
        ApiToken: 1,
        NodeState: 2,
        OperationStep: before.steps,
        Event: before.events.length,
        AuditEntry: before.audit,
      });

      const b = await createTestApp({ clock: a.clock, databaseFile: url, backend: () => a.cluster });
      apps.push(b);
      expect(b.db.dialect).toBe('postgresql');
      // Same events, same cursors.
      expect((await b.db.prisma.event.findMany({ orderBy: { seq: 'asc' } })).map((e) => [e.seq, e.type, e.at.getTime()])).toEqual(
        before.events.map((e) => [e.seq, e.type, e.at.getTime()]),
      );
      expect(await b.db.prisma.apiToken.findMany({ select: { name: true, scope: true } })).toEqual([{ name: 'ops', scope: 'operator' }]);
      expect(b.app.storage.policyOf('3')).toBe('PAUSE');
      expect(b.app.storage.activeOperation('1')?.id).toBe(op.id);
      const done = await settle(b, '1');
      expect(done).toMatchObject({ id: op.id, state: 'SUCCEEDED' });
      expect(done.counts).toMatchObject({ moved: 8, failed: 0 });
      // New events follow the copied ones.
      const last = await b.db.prisma.event.findFirst({ orderBy: { seq: 'desc' } });
      expect(last!.seq).toBeGreaterThan(before.events.at(-1)!.seq);

      await expect(copyDatabase(`file:${file}`, url)).rejects.toThrow(/is not empty \(NodeState has 2 row\(s\)\)/);
    },
  );
});
