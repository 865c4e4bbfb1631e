/**
 * `lockkeeper token create|revoke|list`: works on the database directly (the same
 * LOCKKEEPER_DATABASE_URL / config as the server), no server needed. A running server
 * notices a token created or revoked here on its next request; open subscriptions of a
 * revoked token end within `auth.recheckIntervalMs`.
 */
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/load.ts';
import { LockkeeperError } from '../domain/errors.ts';
import { ApiTokenStore, isUsable, type TokenRecord } from './token-store.ts';
import { openDatabase } from '../store/database.ts';
import { isScope, SCOPES } from './scopes.ts';
import { parseDuration } from './tokens.ts';
import { TOKEN_USAGE } from './token-usage.ts';

export interface CliIo {
  env: NodeJS.ProcessEnv;
  cwd: string;
  out: (text: string) => void;
  err: (text: string) => void;
  now?: () => number;
}

function creator(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
}

function status(t: TokenRecord, now: number): string {
  if (t.revoked) return 'revoked';
  return isUsable(t, now) ? 'active' : 'expired';
}

const iso = (d: Date | null) => (d ? d.toISOString().replace(/\.\d{3}Z$/, 'Z') : '-');

/** Runs one `token` sub-command; resolves with the exit code. */
export async function runTokenCommand(argv: string[], io: CliIo): Promise<number> {
  const [verb, ...rest] = argv;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      strict: true,
      options: { scope: { type: 'string' }, name: { type: 'string' }, 'expires-in': { type: 'string' }, json: { type: 'boolean' } },
    });
  } catch (e) {
    io.err(`lockkeeper token: ${(e as Error).message}\n${TOKEN_USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const now = io.now ?? Date.now;
  const usage = (problem: string) => {
    io.err(`lockkeeper token: ${problem}\n${TOKEN_USAGE}\n`);
    return 2;
  };
  if (verb === 'create') {
    if (!values.name) return usage('--name is required');
    if (!values.scope || !isScope(values.scope)) return usage(`--scope must be one of ${SCOPES.join(', ')}`);
    if (positionals.length) return usage(`unexpected argument ${positionals[0]}`);
  } else if (verb === 'revoke') {
    if (positionals.length !== 1) return usage('revoke takes one token name or id');
  } else if (verb === 'list') {
    if (positionals.length) return usage(`unexpected argument ${positionals[0]}`);
  } else {
    return usage(verb ? `unknown verb "${verb}"` : 'a verb is required');
  }

  const { config } = loadConfig(io.env, io.cwd);
  const db = await openDatabase({ url: config.database.url, cwd: io.cwd });
  const store = new ApiTokenStore(db.prisma);
  try {
    if (verb === 'create') {
      const at = now();
      const expiresAt = values['expires-in'] ? new Date(at + parseDuration(values['expires-in'])) : null;
      const { record, token } = await store.create({
        name: values.name!,
        scope: values.scope as (typeof SCOPES)[number],
        createdBy: creator(),
        expiresAt,
        now: new Date(at),
      });
      io.out(`${token}\n`);
      io.err(
        `created token "${record.name}" (${record.scope}${expiresAt ? `, expires ${iso(expiresAt)}` : ', no expiry'}, id ${record.id}).\n` +
          'It is shown this once: store it now. Send it as "Authorization: Bearer <token>".\n',
      );
    } else if (verb === 'revoke') {
      const record = await store.revoke(positionals[0]!, creator(), new Date(now()));
      io.out(`revoked token "${record.name}" (id ${record.id}) at ${iso(record.revokedAt)}\n`);
    } else {
      const tokens = await store.list();
      const at = now();
      if (values.json) {
        io.out(
          `${JSON.stringify(
            tokens.map((t) => ({ ...t, status: status(t, at) })),
            null,
            2,
          )}\n`,
        );
      } else {
        const rows = [
          ['NAME', 'SCOPE', 'STATUS', 'CREATED', 'CREATED BY', 'LAST USED', 'EXPIRES', 'ID'],
          ...tokens.map((t) => [t.name, t.scope, status(t, at), iso(t.createdAt), t.createdBy, iso(t.lastUsedAt), iso(t.expiresAt), t.id]),
        ];
        const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
        io.out(
          rows
            .map((r) =>
              r
                .map((c, i) => c.padEnd(widths[i]!))
                .join('  ')
                .trimEnd(),
            )
            .join('\n') + '\n',
        );
      }
    }
    return 0;
  } catch (e) {
    if (e instanceof LockkeeperError) {
      io.err(`lockkeeper token ${verb}: ${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    await db.close();
  }
}
