import type { GatewayClient } from './client.ts';
import type { CliIo } from './output.ts';

/** A flag: how node:util parseArgs reads it, and what `--help` and completion say about it. */
export interface FlagSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  description: string;
  /** The value's placeholder in help (`--node N`). */
  value?: string;
  /** The values it takes (any case): listed in help, completed, and named when one is refused. */
  values?: readonly string[];
}

/** What a verb runs with: the gateway, the parsed arguments, where to print. */
export interface VerbContext {
  client: GatewayClient;
  io: CliIo;
  args: string[];
  values: Record<string, string | boolean | string[] | undefined>;
  /** rollout:T3: machine-readable output. */
  json: boolean;
}

/** One client verb (`lockkeeper <name> …`); its own flags come on top of the common ones. */
export interface Verb {
  name: string;
  /** Synopsis line(s), each after `lockkeeper ` (with a short description after the arguments). */
  usage: string;
  /** Sub-commands, for completion. */
  subcommands?: readonly string[];
  options?: Record<string, FlagSpec>;
  /** Shown by `lockkeeper <verb> --help`: whole command lines. */
  examples: readonly string[];
  /** The operator mutations it sends (the parity test of rollout:T2). */
  mutations?: readonly string[];
  run(ctx: VerbContext): Promise<number>;
}

export function stringOption(ctx: VerbContext, name: string): string | undefined {
  const v = ctx.values[name];
  return typeof v === 'string' ? v : undefined;
}

export function listOption(ctx: VerbContext, name: string): string[] {
  const v = ctx.values[name];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
}

/** The positional argument at `i`, or a usage error. */
export function arg(ctx: VerbContext, i: number, what: string): string {
  const v = ctx.args[i];
  if (v === undefined) throw new UsageError(`missing ${what}`);
  return v;
}

export class UsageError extends Error {}

/** `90s`, `30m`, `2h`, `1h30m`, `1m05s` (or plain seconds) → seconds: the forms the CLI prints are read back. */
export function parseSeconds(text: string, flag: string): number {
  const t = text.trim();
  if (/^\d+$/.test(t)) return Number(t);
  const match = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(t);
  if (!t || !match) throw new UsageError(`--${flag} ${text}: not a duration such as 90s, 30m, 2h or 1h30m`);
  return Number(match[1] ?? 0) * 3600 + Number(match[2] ?? 0) * 60 + Number(match[3] ?? 0);
}

/** The canonical spelling of an enum value given in any case, with - or _ (`drain-fill` → DRAIN_FILL). */
const normalised = (text: string) => text.replace(/[-_\s]/g, '').toLowerCase();

/**
 * An enum argument in any case (`shutdown`, `Shutdown`, `SHUTDOWN`, `drain-fill`): the
 * value as `values` spells it, or a usage error that lists every valid value.
 */
export function enumValue(text: string, values: readonly string[], what: string): string {
  const found = values.find((v) => normalised(v) === normalised(text));
  if (found === undefined) throw new UsageError(`${what} "${text}" is not one of ${values.join(', ')} (any case)`);
  return found;
}
