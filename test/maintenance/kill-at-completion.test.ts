import { afterEach, describe, expect, it } from 'vitest';
import type { TestApp } from '../support/graphql-app.ts';
import { driveUntil } from '../operations/drive.ts';
import { cluster, disable, enable, maintenanceApp, phaseOf } from './harness.ts';

/**
 * vm:M6 at the very end of a maintenance (crash campaign, fake backend, round 80: the node was
 * COMPLETED, its operation RUNNING for good). The gateway "dies" as it writes the operation's
 * end: the transaction holding that write never commits (nothing after it is written either),
 * and a second gateway starts on the same database and cluster. Whatever the first had
 * committed, the second must end the operation.
 */

let a: TestApp | undefined;
let b: TestApp | undefined;
afterEach(async () => {
  await b?.stop();
  await a?.db.close();
  a = b = undefined;
});

const topology = () =>
  cluster([
    { namespace: 'default', name: 'web', nodeId: '1' },
    { namespace: 'default', name: 'db', nodeId: '1', maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' },
  ]);

/** Every later transaction holding the write that ends `operationId` never commits: the process died in it. */
function dieAtTheEndOf(t: TestApp, operationId: () => string | undefined): { died: () => boolean } {
  const prisma = t.db.prisma as any;
  const update = prisma.operation.update.bind(prisma.operation);
  const transaction = prisma.$transaction.bind(prisma);
  const fatal = new Set<unknown>();
  prisma.operation.update = (args: { where: { id: string }; data: { finishedAt?: unknown } }) => {
    const write = update(args);
    if (args.where.id === operationId() && args.data.finishedAt) fatal.add(write);
    return write;
  };
  let died = false;
  prisma.$transaction = (writes: unknown) => {
    if (Array.isArray(writes) && writes.some((w) => fatal.has(w))) {
      died = true;
      return new Promise(() => {});
    }
    return transaction(writes);
  };
  return { died: () => died };
}

describe('vm:M6: killed as the maintenance ends', () => {
  it('the node is never left COMPLETED with its operation RUNNING: a restart ends the operation, and disable works', async () => {
    a = await maintenanceApp(topology());
    const started: { id?: string } = {};
    const death = dieAtTheEndOf(a, () => started.id);
    started.id = (await enable(a, '1')).id;
    const id = started.id as string;
    await driveUntil(a, () => death.died());
    await a.app.operations.shutdown();
    b = await maintenanceApp(topology(), { clock: a.clock, databaseFile: a.db.file, backend: () => a!.cluster });
    await driveUntil(b, async () => (await b!.app.operations.getOperation(id))?.state !== 'RUNNING', { maxMs: 600_000 });
    expect(await b.app.operations.getOperation(id)).toMatchObject({ state: 'SUCCEEDED' });
    expect(await phaseOf(b, '1')).toBe('COMPLETED');
    const result = await disable(b, '1');
    expect(result).toMatchObject({ __typename: 'DisableMaintenanceResult', restartedVmIds: ['default/db'] });
    expect(await phaseOf(b, '1')).toBeNull();
  });
});
