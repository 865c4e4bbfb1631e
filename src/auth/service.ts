/**
 * Who is calling, and may they: one service shared by HTTP GraphQL, graphql-ws, the Neon
 * REST facade and /metrics, so every entrance applies the same rule.
 *
 * Modes:
 * - open: no usable token in the database and no bootstrap token (LOCKKEEPER_ADMIN_TOKEN).
 *   Every caller is `anonymous` with the admin scope; the server only binds to loopback
 *   (see `checkBindAddress`).
 * - enforced: a usable token exists (or the bootstrap token is set). Every request must
 *   carry a token. Once enforced, a running server stays enforced (revoking the last token
 *   never re-opens it); the mode is re-checked on start, on token creation, and every
 *   `recheckIntervalMs` (tokens created by `lockkeeper token create` in another process).
 */
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { DatabaseUnavailableError } from '../domain/errors.ts';
import type { Logger } from '../logger.ts';
import { isUsable, type ApiTokenStore, type TokenRecord } from './token-store.ts';
import { scopeAllows, type Scope } from './scopes.ts';
import { ANONYMOUS_ACTOR, BOOTSTRAP_ACTOR, parseDuration, sameSecret } from './tokens.ts';

export interface Identity {
  /** Recorded as the actor of audit rows: the token's name. */
  name: string;
  /** null: not authenticated (enforced mode, no token). */
  scope: Scope | null;
  kind: 'token' | 'bootstrap' | 'anonymous' | 'none';
  tokenId: string | null;
}

export const ANONYMOUS_ADMIN: Identity = Object.freeze({ name: ANONYMOUS_ACTOR, scope: 'admin', kind: 'anonymous', tokenId: null });
const UNAUTHENTICATED: Identity = Object.freeze({ name: 'unauthenticated', scope: null, kind: 'none', tokenId: null });

/** A refusal at the door: 401 (no valid token) or 403 (token too weak). */
export class AuthRefusal extends Error {
  override readonly name = 'AuthRefusal';
  constructor(
    readonly status: 401 | 403,
    message: string,
  ) {
    super(message);
  }
  get code(): 'UNAUTHENTICATED' | 'FORBIDDEN' {
    return this.status === 401 ? 'UNAUTHENTICATED' : 'FORBIDDEN';
  }
}

export interface AuthOptions {
  /** LOCKKEEPER_ADMIN_TOKEN: a secret accepted as an admin token named `bootstrap-admin`. */
  bootstrapToken?: string | undefined;
  /** How often open WebSockets and event streams re-check their token (revoked elsewhere, expired). */
  recheckIntervalMs: number;
  /** Mutations (GraphQL root fields, REST PUT/DELETE) per token per minute; 0 = no limit. */
  mutationsPerMinute: number;
  /** Wall-clock time for expiry and last use (tests); default Date.now. */
  now?: () => number;
  /** A token verified at most this long ago is accepted while the database is unavailable (config auth.outageGraceMs); default 0. */
  outageGraceMs?: number;
  /** The database's errors as callers should see them (DatabaseAvailability.typed): an outage becomes a DatabaseUnavailableError. */
  typedError?: (error: unknown) => unknown;
}

const MIN_BOOTSTRAP_TOKEN_LENGTH = 24;
const TOUCH_EVERY_MS = 60_000;

export class AuthService {
  private enforcedNow: boolean;
  private readonly events = new EventEmitter();
  private readonly watched = new Map<string, number>();
  private readonly touched = new Map<string, number>();
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  /** Tokens the database vouched for, by the SHA-256 of the secret: what an outage may still accept. */
  private readonly verified = new Map<string, { identity: Identity; at: number; expiresAt: number | null }>();
  private timer: NodeJS.Timeout | undefined;
  readonly now: () => number;
  readonly mutationsPerMinute: number;
  readonly recheckIntervalMs: number;

  constructor(
    readonly store: ApiTokenStore,
    private readonly log: Logger,
    private readonly options: AuthOptions,
  ) {
    if (options.bootstrapToken !== undefined && options.bootstrapToken.length < MIN_BOOTSTRAP_TOKEN_LENGTH) {
      throw new Error(`LOCKKEEPER_ADMIN_TOKEN is too short: use at least ${MIN_BOOTSTRAP_TOKEN_LENGTH} random characters (e.g. openssl rand -base64 32)`);
    }
    this.enforcedNow = Boolean(options.bootstrapToken);
    this.now = options.now ?? Date.now;
    this.mutationsPerMinute = options.mutationsPerMinute;
    this.recheckIntervalMs = options.recheckIntervalMs;
    this.events.setMaxListeners(0);
  }

  /** Whether callers must present a token. */
  get enforced(): boolean {
    return this.enforcedNow;
  }

  /** Decides the mode from the database, then re-checks watched tokens periodically. */
  async start(): Promise<void> {
    await this.refreshMode();
    this.timer ??= setInterval(() => void this.recheck(), this.recheckIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private refreshedAt = Number.NEGATIVE_INFINITY;

  private async refreshMode(): Promise<void> {
    if (this.enforcedNow) return;
    this.refreshedAt = this.now();
    let usable: number;
    try {
      usable = await this.store.countUsable(new Date(this.now()));
    } catch (e) {
      throw this.options.typedError?.(e) ?? e;
    }
    if (usable > 0) {
      this.enforcedNow = true;
      this.log.info('authentication on: a token exists, every request now needs one');
    }
  }

  /** `Authorization: Bearer …` → the token, null when absent. A malformed header is refused. */
  static credentialFromHeader(header: string | null | undefined): string | null {
    if (header == null || header.trim() === '') return null;
    const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new AuthRefusal(401, 'the Authorization header must be "Bearer <token>"');
    return match[1]!;
  }

  /** graphql-ws connection_init payload: `{ authorization: 'Bearer …' }`, `{ Authorization: … }` or `{ token: '…' }`. */
  static credentialFromConnectionParams(params: unknown): string | null {
    if (params === null || typeof params !== 'object') return null;
    const p = params as Record<string, unknown>;
    const header = p.authorization ?? p.Authorization;
    if (typeof header === 'string') return AuthService.credentialFromHeader(header);
    if (typeof p.token === 'string' && p.token !== '') return p.token;
    return null;
  }

  /**
   * The caller behind a credential. No credential: anonymous admin in open mode,
   * unauthenticated (no scope) when enforced. A credential that is not a usable token is
   * refused with 401, in both modes.
   */
  async identify(credential: string | null): Promise<Identity> {
    if (credential === null) {
      // A token created by the CLI while we run turns authentication on; look at most once a second.
      // While the database is unavailable the mode stays as it was (open mode listens on loopback only).
      if (!this.enforcedNow && this.now() - this.refreshedAt >= 1000) await this.refreshMode().catch(() => {});
      return this.enforcedNow ? UNAUTHENTICATED : ANONYMOUS_ADMIN;
    }
    if (credential.length > 512) throw new AuthRefusal(401, 'invalid token');
    if (this.options.bootstrapToken && sameSecret(credential, this.options.bootstrapToken)) {
      return { name: BOOTSTRAP_ACTOR, scope: 'admin', kind: 'bootstrap', tokenId: null };
    }
    const key = createHash('sha256').update(credential).digest('base64url');
    let token: TokenRecord | null;
    try {
      token = await this.store.findByToken(credential);
    } catch (e) {
      const typed = this.options.typedError?.(e) ?? e;
      const kept = typed instanceof DatabaseUnavailableError ? this.verifiedBefore(key) : null;
      if (kept) return kept;
      throw typed;
    }
    if (!token || token.revoked || !isUsable(token, this.now())) this.verified.delete(key);
    if (!token) throw new AuthRefusal(401, 'invalid token');
    if (token.revoked) throw new AuthRefusal(401, `token "${token.name}" has been revoked`);
    const now = this.now();
    if (!isUsable(token, now)) throw new AuthRefusal(401, `token "${token.name}" expired at ${token.expiresAt!.toISOString()}`);
    if (!this.enforcedNow) {
      this.enforcedNow = true;
      this.log.info('authentication on: a token exists, every request now needs one');
    }
    this.touch(token, now);
    const identity: Identity = { name: token.name, scope: token.scope, kind: 'token', tokenId: token.id };
    if ((this.options.outageGraceMs ?? 0) > 0) this.verified.set(key, { identity, at: now, expiresAt: token.expiresAt?.getTime() ?? null });
    return identity;
  }

  /** The identity of a token the database vouched for within the outage grace (and not expired since), else null. */
  private verifiedBefore(key: string): Identity | null {
    const entry = this.verified.get(key);
    const now = this.now();
    if (!entry || now - entry.at > (this.options.outageGraceMs ?? 0) || (entry.expiresAt !== null && entry.expiresAt <= now)) return null;
    return entry.identity;
  }

  /** identify + a scope check, for entrances outside GraphQL (REST, /metrics). */
  async authorize(credential: string | null, needed: Scope): Promise<Identity> {
    const identity = await this.identify(credential);
    if (identity.scope === null) throw new AuthRefusal(401, 'authentication required: send "Authorization: Bearer <token>"');
    if (!scopeAllows(identity.scope, needed)) {
      throw new AuthRefusal(403, `token "${identity.name}" has the ${identity.scope} scope; this needs ${needed}`);
    }
    return identity;
  }

  private touch(token: TokenRecord, now: number): void {
    const last = this.touched.get(token.id) ?? token.lastUsedAt?.getTime() ?? 0;
    if (now - last < TOUCH_EVERY_MS) return;
    this.touched.set(token.id, now);
    this.store.touch(token.id, new Date(now)).catch((e: unknown) => this.log.warn({ err: e }, 'could not record token use'));
  }

  /**
   * Calls `onEnd` once when the identity's token stops being usable (revoked here, revoked
   * by the CLI, expired). Returns the unwatch function. Identities without a token never end.
   */
  watch(identity: Identity, onEnd: (reason: string) => void): () => void {
    const id = identity.tokenId;
    if (!id) return () => {};
    let done = false;
    const listener = (tokenId: string, reason: string) => {
      if (tokenId !== id || done) return;
      done = true;
      unwatch();
      onEnd(reason);
    };
    this.events.on('ended', listener);
    this.watched.set(id, (this.watched.get(id) ?? 0) + 1);
    const unwatch = () => {
      this.events.off('ended', listener);
      const left = (this.watched.get(id) ?? 1) - 1;
      if (left <= 0) this.watched.delete(id);
      else this.watched.set(id, left);
    };
    return () => {
      if (done) return;
      done = true;
      unwatch();
    };
  }

  /** Re-reads every watched token; ends the watchers of the unusable ones. */
  async recheck(): Promise<void> {
    try {
      await this.refreshMode();
      for (const id of [...this.watched.keys()]) {
        const token = await this.store.findById(id);
        if (!token) this.ended(id, 'token deleted');
        else if (token.revoked) this.ended(id, `token "${token.name}" has been revoked`);
        else if (!isUsable(token, this.now())) this.ended(id, `token "${token.name}" expired`);
      }
    } catch (e) {
      this.log.warn({ err: e }, 'token re-check failed');
    }
  }

  private ended(tokenId: string, reason: string): void {
    for (const [key, entry] of this.verified) if (entry.identity.tokenId === tokenId) this.verified.delete(key);
    this.events.emit('ended', tokenId, reason);
  }

  /** Creates a token (GraphQL createToken, the CLI uses the store directly). */
  async createToken(input: { name: string; scope: Scope; expiresIn?: string | null; createdBy: string }) {
    const now = this.now();
    const expiresAt = input.expiresIn ? new Date(now + parseDuration(input.expiresIn)) : null;
    const created = await this.store.create({ name: input.name, scope: input.scope, createdBy: input.createdBy, expiresAt, now: new Date(now) });
    if (!this.enforcedNow) {
      this.enforcedNow = true;
      this.log.info({ token: input.name }, 'authentication on: a token was created, every request now needs one');
    }
    return created;
  }

  /** Revokes a token; its open subscriptions end at once. */
  async revokeToken(nameOrId: string, by: string): Promise<TokenRecord> {
    const record = await this.store.revoke(nameOrId, by, new Date(this.now()));
    this.ended(record.id, `token "${record.name}" has been revoked`);
    return record;
  }

  /**
   * Takes `count` mutations from the identity's bucket (capacity and refill: the per-minute
   * limit). Returns 0 when allowed, else the milliseconds until enough have refilled.
   * Anonymous callers (open mode, loopback only) are not limited.
   */
  takeMutations(identity: Identity, count: number): number {
    const limit = this.mutationsPerMinute;
    if (limit <= 0 || identity.kind === 'anonymous' || identity.kind === 'none' || count <= 0) return 0;
    const now = this.now();
    const perMs = limit / 60_000;
    const bucket = this.buckets.get(identity.name) ?? { tokens: limit, at: now };
    bucket.tokens = Math.min(limit, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
    this.buckets.set(identity.name, bucket);
    if (count > limit) return Math.ceil(60_000);
    if (bucket.tokens >= count) {
      bucket.tokens -= count;
      return 0;
    }
    return Math.max(1, Math.ceil((count - bucket.tokens) / perMs));
  }
}

const LOOPBACK = /^(127(?:\.\d{1,3}){3}|::1|localhost|::ffff:127(?:\.\d{1,3}){3})$/i;

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host.replace(/^\[|\]$/g, ''));
}

/**
 * The safe default: without authentication, only loopback. Throws (start-up refused)
 * when asked to bind elsewhere with no token and no insecure flag.
 */
export function checkBindAddress(host: string, auth: { enforced: boolean }, insecure: boolean): 'enforced' | 'open-loopback' | 'open-insecure' {
  if (auth.enforced) return 'enforced';
  if (isLoopbackHost(host)) return 'open-loopback';
  if (insecure) return 'open-insecure';
  throw new Error(
    `refusing to listen on ${host} without authentication: create a token first (lockkeeper token create --scope admin --name <name>) ` +
      'or set LOCKKEEPER_ADMIN_TOKEN, or allow it explicitly with server.insecure: true / LOCKKEEPER_INSECURE=1',
  );
}
