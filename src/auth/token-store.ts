import { randomUUID } from 'node:crypto';
import { isScope, type Scope } from './scopes.ts';
import { checkTokenName, generateToken, hashToken, UnknownTokenError } from './tokens.ts';
import { ConflictError } from '../domain/errors.ts';
import type { ApiToken, PrismaClient } from '../store/index.ts';
import type { HotPath } from '../store/hot-path-sql.ts';

export interface TokenRecord {
  id: string;
  name: string;
  scope: Scope;
  createdBy: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revoked: boolean;
  revokedAt: Date | null;
  revokedBy: string | null;
}

export interface NewToken {
  name: string;
  scope: Scope;
  createdBy: string;
  expiresAt: Date | null;
  now: Date;
}

function toRecord(row: ApiToken): TokenRecord {
  // A row with a scope we do not know (edited by hand) grants nothing: treat it as revoked.
  const scope = isScope(row.scope) ? row.scope : 'viewer';
  return {
    id: row.id,
    name: row.name,
    scope,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
    expiresAt: row.expiresAt,
    revoked: row.revoked || !isScope(row.scope),
    revokedAt: row.revokedAt,
    revokedBy: row.revokedBy,
  };
}

/** Whether the token may be used at `now`. */
export function isUsable(token: TokenRecord, now: number): boolean {
  return !token.revoked && (token.expiresAt === null || token.expiresAt.getTime() > now);
}

/** The API tokens table: only hashes, never a token. Used by the server and by `lockkeeper token`. */
export class ApiTokenStore {
  constructor(
    private readonly prisma: PrismaClient,
    /** The hot path's lookup by hash (Database.hotPath.findApiToken), where the dialect has one. */
    private readonly lookup?: HotPath['findApiToken'],
  ) {}

  /** Creates a token; the returned `token` string exists nowhere else (show it once). */
  async create(input: NewToken): Promise<{ record: TokenRecord; token: string }> {
    checkTokenName(input.name);
    const token = generateToken();
    const existing = await this.prisma.apiToken.findUnique({ where: { name: input.name } });
    if (existing) throw new ConflictError(`a token named "${input.name}" already exists${existing.revoked ? ' (revoked; names are never reused)' : ''}`);
    try {
      const row = await this.prisma.apiToken.create({
        data: {
          id: randomUUID(),
          name: input.name,
          scope: input.scope,
          tokenHash: hashToken(token),
          createdBy: input.createdBy,
          createdAt: input.now,
          expiresAt: input.expiresAt,
        },
      });
      return { record: toRecord(row), token };
    } catch (e) {
      // Two concurrent creations with the same name: the unique index decides.
      if ((e as { code?: string }).code === 'P2002') throw new ConflictError(`a token named "${input.name}" already exists`);
      throw e;
    }
  }

  async findByToken(token: string): Promise<TokenRecord | null> {
    const tokenHash = hashToken(token);
    let row = await this.lookup?.(tokenHash);
    if (row === undefined) row = await this.prisma.apiToken.findUnique({ where: { tokenHash } });
    return row ? toRecord(row) : null;
  }

  async findById(id: string): Promise<TokenRecord | null> {
    const row = await this.prisma.apiToken.findUnique({ where: { id } });
    return row ? toRecord(row) : null;
  }

  /** Every token, newest first (revoked and expired included). */
  async list(): Promise<TokenRecord[]> {
    const rows = await this.prisma.apiToken.findMany({ orderBy: [{ createdAt: 'desc' }, { name: 'asc' }] });
    return rows.map(toRecord);
  }

  /** Tokens that are neither revoked nor expired at `now`. */
  async countUsable(now: Date): Promise<number> {
    return this.prisma.apiToken.count({ where: { revoked: false, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] } });
  }

  /** Revokes by name or id; revoking a revoked token changes nothing and returns it. */
  async revoke(nameOrId: string, by: string, now: Date): Promise<TokenRecord> {
    const row = (await this.prisma.apiToken.findUnique({ where: { name: nameOrId } })) ?? (await this.prisma.apiToken.findUnique({ where: { id: nameOrId } }));
    if (!row) throw new UnknownTokenError(nameOrId);
    if (row.revoked) return toRecord(row);
    return toRecord(await this.prisma.apiToken.update({ where: { id: row.id }, data: { revoked: true, revokedAt: now, revokedBy: by } }));
  }

  async touch(id: string, at: Date): Promise<void> {
    await this.prisma.apiToken.updateMany({ where: { id }, data: { lastUsedAt: at } });
  }
}
