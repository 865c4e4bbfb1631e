import { parseArgs } from 'node:util';
import { CliError, EXIT, GatewayClient } from './client.ts';
import type { CliIo } from './output.ts';
import { UsageError, type Verb } from './verb.ts';
import { clusterVerbs } from './verbs/cluster.ts';
import { operationVerbs } from './verbs/operations.ts';
import { leadershipVerb } from './verbs/leadership.ts';
import { rolloutVerb } from './verbs/rollout.ts';

/** The client verbs of `lockkeeper` (rollout:T2), one module per group. */
export const CLIENT_VERBS: readonly Verb[] = [...clusterVerbs, ...operationVerbs, rolloutVerb, leadershipVerb];

/**
 * Mutations no client verb sends, and why (the parity test of rollout:T2 accepts only
 * these): tokens are managed by `lockkeeper token` on the database, and `simulation`
 * drives the simulated cluster, not a real one.
 */
export const MUTATIONS_WITHOUT_VERB: Readonly<Record<string, string>> = {
  createToken: 'lockkeeper token create (on the database)',
  revokeToken: 'lockkeeper token revoke (on the database)',
  simulation: 'controls of the simulated cluster only',
};

const DEFAULT_SERVER = 'http://127.0.0.1:4000/graphql';

const COMMON = {
  server: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  reason: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const CLIENT_USAGE = `client commands (talk to a running gateway):
${CLIENT_VERBS.map((v) => `  ${v.usage}`).join('\n')}

  common flags: --server URL (LOCKKEEPER_URL, default ${DEFAULT_SERVER})
                --token TOKEN (LOCKKEEPER_TOKEN)   --json (machine-readable output)
  exit codes:   0 done, 1 the operation ended FAILED or CANCELLED, 2 refused or bad usage,
                3 gateway unreachable or not allowed, 4 a watched rollout is PAUSED`;

export const isClientVerb = (name: string) => CLIENT_VERBS.some((v) => v.name === name);

/** Runs one client verb; resolves with the exit code (rollout:T5). */
export async function runClientVerb(name: string, argv: string[], io: CliIo): Promise<number> {
  const verb = CLIENT_VERBS.find((v) => v.name === name)!;
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { ...COMMON, ...verb.options } });
  } catch (e) {
    io.err(`lockkeeper ${name}: ${(e as Error).message}\nusage: lockkeeper ${verb.usage}\n`);
    return EXIT.REFUSED;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(`usage: lockkeeper ${verb.usage}\n`);
    return EXIT.DONE;
  }
  const url = (values.server as string | undefined) ?? io.env.LOCKKEEPER_URL ?? DEFAULT_SERVER;
  const client = new GatewayClient(url, (values.token as string | undefined) ?? io.env.LOCKKEEPER_TOKEN);
  try {
    return await verb.run({
      client,
      io,
      args: positionals,
      values: values as Record<string, string | boolean | string[] | undefined>,
      json: values.json === true,
    });
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`lockkeeper ${name}: ${e.message}\nusage: lockkeeper ${verb.usage}\n`);
      return EXIT.REFUSED;
    }
    if (e instanceof CliError) {
      io.err(`lockkeeper ${name}: ${e.message}\n`);
      return e.exitCode;
    }
    throw e;
  } finally {
    await client.close();
  }
}
