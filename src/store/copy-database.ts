/**
 * `lockkeeper db copy --from URL --to URL` (acceptance 7 of spec high-availability): moves an
 * installation from one database to another — typically its SQLite file to an empty
 * PostgreSQL database before running several replicas. Every table is copied row for row
 * (ids, timestamps and event sequence numbers kept, so cursors and audit stay valid), in
 * one transaction on the target, which must be empty. A gateway started on the copy resumes
 * what was running, as after a restart. The leader lease is not copied: it belongs to the
 * replicas of the target.
 */
import { Prisma, type PrismaClient } from './generated/client.ts';
import { openDatabase, type Database } from './database.ts';
import { acquireServeLock } from './serve-lock.ts';

type Model = Prisma.ModelName;

/** Parents before children (OperationPlan and OperationStep reference Operation). Every model is here or in NOT_COPIED (a test checks). */
export const COPY_ORDER: readonly Model[] = [
  'NodeState',
  'Operation',
  'OperationPlan',
  'OperationStep',
  'Event',
  'AuditEntry',
  'ApiToken',
  'VmTracking',
  // The plugins' intent, nodes and generations (neon:C4): a copy must continue the generations, never reissue one.
  'PluginNode',
  'PluginShard',
  'PluginMeta',
  // Rehearsals and the rollouts they stood for (rolloutId names an Operation): startRollout(rehearsal:) and the dashboard read them.
  'Rehearsal',
];
export const NOT_COPIED: readonly Model[] = ['LeaderLease'];

const CHUNK = 500;

class CopyRefusedError extends Error {
  override readonly name = 'CopyRefusedError';
}

type Delegate = {
  count(): Promise<number>;
  findMany(args: { skip: number; take: number; orderBy: Record<string, 'asc'>[] }): Promise<Record<string, unknown>[]>;
  createMany(args: { data: Record<string, unknown>[] }): Prisma.PrismaPromise<unknown>;
};

const delegate = (prisma: PrismaClient, model: Model) => (prisma as unknown as Record<string, Delegate>)[model.charAt(0).toLowerCase() + model.slice(1)]!;

/** The columns rows are ordered by when read in pages: the primary key. */
const ORDER_BY: Record<string, string[]> = {
  Event: ['seq'],
  VmTracking: ['vmId'],
  OperationPlan: ['operationId'],
  PluginNode: ['plugin', 'id'],
  PluginShard: ['plugin', 'id'],
  PluginMeta: ['plugin', 'key'],
};

interface CopyResult {
  from: string;
  to: string;
  rows: Record<string, number>;
}

export async function copyDatabase(fromUrl: string, toUrl: string, options: { cwd?: string } = {}): Promise<CopyResult> {
  const from = await openDatabase({ url: fromUrl, ...(options.cwd && { cwd: options.cwd }) });
  let to: Database | undefined;
  let release = () => {};
  try {
    // A gateway still serving the source would go on changing it under the copy.
    if (from.dialect === 'sqlite') {
      try {
        release = acquireServeLock(from.file);
      } catch (e) {
        throw new CopyRefusedError(`${e instanceof Error ? e.message : String(e)}: stop it before copying its database`);
      }
    }
    to = await openDatabase({ url: toUrl, ...(options.cwd && { cwd: options.cwd }) });
    if (to.file === from.file) throw new CopyRefusedError(`source and target are the same database (${to.file})`);
    for (const model of [...COPY_ORDER, ...NOT_COPIED]) {
      const count = await delegate(to.prisma, model).count();
      if (count > 0) throw new CopyRefusedError(`the target ${to.file} is not empty (${model} has ${count} row(s)): copy only into an empty database`);
    }
    const rows: Record<string, number> = {};
    const writes: Prisma.PrismaPromise<unknown>[] = [];
    for (const model of COPY_ORDER) {
      const source = delegate(from.prisma, model);
      const target = delegate(to.prisma, model);
      const total = await source.count();
      for (let skip = 0; skip < total; skip += CHUNK) {
        const data = await source.findMany({ skip, take: CHUNK, orderBy: (ORDER_BY[model] ?? ['id']).map((column) => ({ [column]: 'asc' as const })) });
        writes.push(target.createMany({ data }));
      }
      rows[model] = total;
    }
    // The event log's next seq follows the copied ones (the rows kept their own).
    if (to.dialect === 'postgresql') {
      writes.push(
        to.prisma
          .$queryRaw`SELECT setval(pg_get_serial_sequence('"Event"', 'seq'), GREATEST((SELECT max("seq") FROM "Event"), 1), (SELECT count(*) > 0 FROM "Event"))`,
      );
    }
    await to.prisma.$transaction(writes);
    return { from: from.file, to: to.file, rows };
  } finally {
    release();
    await to?.close();
    await from.close();
  }
}
