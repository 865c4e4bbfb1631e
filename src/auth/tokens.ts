/**
 * Token format: `lk_` followed by 32 random bytes in base64url (43 characters), e.g.
 * `lk_3q2-7wVx…`. The prefix makes a leaked token recognisable to secret scanners and to
 * people. Only the SHA-256 of the whole string is stored: the token has 256 bits of
 * entropy, so a fast hash is enough (nothing to brute-force), and a lookup is one indexed
 * read.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { InvalidInputError, LockkeeperError } from '../domain/errors.ts';

const TOKEN_PREFIX = 'lk_';

export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Constant-time comparison of two secrets of any length (through their hashes). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/** Names appear as the actor in the audit log: short, printable, no spaces. */
const TOKEN_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$/;

/** Actors that are not tokens: a token may not take their names. */
export const ANONYMOUS_ACTOR = 'anonymous';
export const BOOTSTRAP_ACTOR = 'bootstrap-admin';
const RESERVED_NAMES: ReadonlySet<string> = new Set([ANONYMOUS_ACTOR, BOOTSTRAP_ACTOR, 'rest', 'system', 'unauthenticated']);

export function checkTokenName(name: string): void {
  if (!TOKEN_NAME_PATTERN.test(name)) {
    throw new InvalidInputError('name', name.slice(0, 80), 'a token name is 1-64 characters: letters, digits and . _ : @ -, starting with a letter or digit');
  }
  if (RESERVED_NAMES.has(name)) throw new InvalidInputError('name', name, `"${name}" is reserved`);
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };
const MAX_EXPIRY_MS = 10 * 366 * 86_400_000;

/** `30d`, `12h`, `90m`, `2w`, `45s` → milliseconds. */
export function parseDuration(text: string): number {
  const match = /^\s*(\d{1,6})\s*([smhdw])\s*$/.exec(text);
  if (!match) throw new InvalidInputError('expiresIn', text.slice(0, 40), `"${text.slice(0, 40)}" is not a duration such as 30d, 12h, 90m, 2w`);
  const ms = Number(match[1]) * UNIT_MS[match[2]!]!;
  if (ms <= 0 || ms > MAX_EXPIRY_MS) throw new InvalidInputError('expiresIn', text, 'a token expires after more than 0 and at most 10 years');
  return ms;
}

/** A token that does not exist (by name or id). */
export class UnknownTokenError extends LockkeeperError {
  readonly code = 'NOT_FOUND';
  constructor(readonly token: string) {
    super(`no token named or with id ${JSON.stringify(token)}`);
  }
}
