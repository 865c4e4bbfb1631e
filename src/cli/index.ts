import { parseArgs } from 'node:util';
import { CliError, EXIT, GatewayClient } from './client.ts';
import { json, type CliIo } from './output.ts';
import { UsageError, type FlagSpec, type Verb } from './verb.ts';
import { COMMON, DEFAULT_SERVER, EXIT_CODES } from './common.ts';
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

export const CLIENT_USAGE = `client commands (talk to a running gateway; lockkeeper <command> --help for flags and examples):
${CLIENT_VERBS.map((v) => `  ${v.usage}`).join('\n')}

  common flags: --server URL (LOCKKEEPER_URL, default ${DEFAULT_SERVER})
                --token TOKEN (LOCKKEEPER_TOKEN)   --json (machine-readable output, errors included)
  ${EXIT_CODES}`;

export const findClientVerb = (name: string) => CLIENT_VERBS.find((v) => v.name === name);

/** parseArgs' view of the flags (it takes only how to read them). */
const parseOptions = (flags: Record<string, FlagSpec>) =>
  Object.fromEntries(
    Object.entries(flags).map(([name, f]) => [name, { type: f.type, ...(f.multiple && { multiple: true }), ...(f.short && { short: f.short }) }]),
  );

/** `--json`: the error as one JSON document on stdout (the exit code says the rest); otherwise one line on stderr. */
function reportError(io: CliIo, asJson: boolean, prefix: string, e: CliError): number {
  if (asJson) io.out(json({ error: { code: e.code, message: e.message, exitCode: e.exitCode, ...e.details } }));
  else io.err(`${prefix}: ${e.message}\n`);
  return e.exitCode;
}

/** Runs one client verb; resolves with the exit code (rollout:T5). */
export async function runClientVerb(name: string, argv: string[], io: CliIo): Promise<number> {
  const verb = findClientVerb(name)!;
  const asJson = argv.includes('--json');
  const usageError = (message: string) =>
    reportError(io, asJson, `lockkeeper ${name}`, new CliError(EXIT.REFUSED, `${message} (lockkeeper ${name} --help)`, 'USAGE'));
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: parseOptions({ ...COMMON, ...verb.options }) });
  } catch (e) {
    // node's message goes on about `--` for positionals that start with a dash: its first sentence says it all.
    return usageError((e as Error).message.split(/\.\s/)[0]!.replace(/\.$/, ''));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    const { verbHelp } = await import('./help.ts');
    io.out(verbHelp(verb));
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
    if (e instanceof UsageError) return usageError(e.message);
    if (e instanceof CliError) return reportError(io, asJson, `lockkeeper ${name}`, e);
    throw e;
  } finally {
    await client.close();
  }
}
