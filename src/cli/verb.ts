import type { GatewayClient } from './client.ts';
import type { CliIo } from './output.ts';

type OptionSpec = { type: 'string' | 'boolean'; multiple?: boolean; short?: string };

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
  usage: string;
  options?: Record<string, OptionSpec>;
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

/** `90s`, `30m`, `2h` (or plain seconds) → seconds. */
export function parseSeconds(text: string, flag: string): number {
  const match = /^(\d+)\s*(s|m|h)?$/.exec(text.trim());
  if (!match) throw new UsageError(`--${flag} ${text}: not a duration such as 90s, 30m or 2h`);
  return Number(match[1]) * { s: 1, m: 60, h: 3600 }[(match[2] ?? 's') as 's' | 'm' | 'h'];
}
