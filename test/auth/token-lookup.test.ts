/**
 * Issue 29 point 4: every request with a token looks the token up (a revocation by the CLI,
 * in another process, takes effect at the next request). On SQLite the lookup is a statement
 * prepared once on the store's connection, not a Prisma query: it must read what Prisma wrote,
 * field for field, see a revocation at once, leave an open Prisma transaction to Prisma, and
 * fail like the rest of the store while the database is unavailable.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiTokenStore } from '../../src/auth/token-store.ts';
import { hashToken } from '../../src/auth/tokens.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import type { PrismaClient } from '../../src/store/index.ts';

let db: Database | undefined;
let dir: string | undefined;
afterEach(async () => {
  await db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  db = undefined;
  dir = undefined;
});

async function open(): Promise<Database> {
  dir = mkdtempSync(join(tmpdir(), 'lockkeeper-token-lookup-'));
  db = await openDatabase({ url: `file:${join(dir, 'tokens.db')}` });
  return db;
}

/** A Prisma client whose token reads fail: a lookup that still answers did not use Prisma. */
function withoutPrismaTokenReads(prisma: PrismaClient): PrismaClient {
  return new Proxy(prisma, {
    get(target, key) {
      if (key !== 'apiToken') return Reflect.get(target, key) as unknown;
      return { findUnique: () => Promise.reject(new Error('the token was read through Prisma')) };
    },
  });
}

describe('API token lookup on SQLite (issue 29 point 4)', () => {
  it('reads the token Prisma wrote, every field, without a Prisma query', async () => {
    const { prisma, hotPath } = await open();
    const writer = new ApiTokenStore(prisma);
    const expiresAt = new Date('2031-05-06T07:08:09.123Z');
    const { token } = await writer.create({ name: 'ci', scope: 'operator', createdBy: 'alice', expiresAt, now: new Date('2026-01-02T03:04:05.678Z') });
    const reader = new ApiTokenStore(withoutPrismaTokenReads(prisma), hotPath.findApiToken);
    const found = await reader.findByToken(token);
    expect(found).toEqual({
      id: expect.any(String),
      name: 'ci',
      scope: 'operator',
      createdBy: 'alice',
      createdAt: new Date('2026-01-02T03:04:05.678Z'),
      lastUsedAt: null,
      expiresAt: new Date('2031-05-06T07:08:09.123Z'),
      revoked: false,
      revokedAt: null,
      revokedBy: null,
    });
    expect(await reader.findByToken(`${token}x`)).toBeNull();
  });

  it('sees a revocation and a last use written through Prisma at the next lookup', async () => {
    const { prisma, hotPath } = await open();
    const { token } = await new ApiTokenStore(prisma).create({
      name: 'ops',
      scope: 'admin',
      createdBy: 'bob',
      expiresAt: null,
      now: new Date('2026-03-01T00:00:00Z'),
    });
    const reader = new ApiTokenStore(withoutPrismaTokenReads(prisma), hotPath.findApiToken);
    expect((await reader.findByToken(token))?.revoked).toBe(false);
    await prisma.apiToken.update({
      where: { tokenHash: hashToken(token) },
      data: { revoked: true, revokedAt: new Date('2026-03-02T00:00:00Z'), revokedBy: 'carol', lastUsedAt: new Date('2026-03-01T12:00:00Z') },
    });
    expect(await reader.findByToken(token)).toMatchObject({
      revoked: true,
      revokedAt: new Date('2026-03-02T00:00:00Z'),
      revokedBy: 'carol',
      lastUsedAt: new Date('2026-03-01T12:00:00Z'),
    });
  });

  it('leaves a lookup during an open Prisma transaction to Prisma (it would see uncommitted writes)', async () => {
    const { prisma, hotPath } = await open();
    const { token } = await new ApiTokenStore(prisma).create({
      name: 'tx',
      scope: 'viewer',
      createdBy: 'dan',
      expiresAt: null,
      now: new Date('2026-03-01T00:00:00Z'),
    });
    let seen: unknown = 'not run';
    await prisma.$transaction(async (tx) => {
      await tx.apiToken.update({ where: { name: 'tx' }, data: { revoked: true } });
      seen = await hotPath.findApiToken!(hashToken(token));
    });
    expect(seen).toBeUndefined();
  });

  it('fails with the store while the database is unavailable (issue 27 outage handling applies)', async () => {
    const database = await open();
    const { token } = await new ApiTokenStore(database.prisma).create({
      name: 'down',
      scope: 'viewer',
      createdBy: 'erin',
      expiresAt: null,
      now: new Date('2026-03-01T00:00:00Z'),
    });
    database.faults!.unavailable(true);
    await expect(new ApiTokenStore(database.prisma, database.hotPath.findApiToken).findByToken(token)).rejects.toMatchObject({ code: 'SQLITE_IOERR' });
    database.faults!.unavailable(false);
    expect((await new ApiTokenStore(database.prisma, database.hotPath.findApiToken).findByToken(token))?.name).toBe('down');
  });
});
