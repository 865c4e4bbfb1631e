/* eslint-disable @typescript-eslint/no-explicit-any -- results are read as the documents select them; test/cli/documents.test.ts validates every document against schema.graphql (rollout:T6) */
import { EXIT, refused } from '../client.ts';
import { DOCUMENTS } from '../documents.ts';
import { json } from '../output.ts';
import { arg, stringOption, UsageError, type Verb } from '../verb.ts';

/**
 * One sentence a person reads without the schema: a sole replica (no election, ha:L1) leads
 * by itself; a leader says since which epoch; a stand-by names the leader it follows.
 */
const describe = (l: any) => {
  if (l.role === 'LEADER')
    return l.epoch === null ? `replica ${l.replica} is the only replica and leads (no election)\n` : `replica ${l.replica} leads (epoch ${l.epoch})\n`;
  const leader = l.leader ? `${l.leader.address} leads (epoch ${l.leader.epoch})` : 'no replica leads right now';
  return `replica ${l.replica} is a stand-by; ${leader}\n`;
};

/** ha:L5, ha:L6: which replica leads, and the leader stepping down on purpose. */
export const leadershipVerb: Verb = {
  name: 'leader',
  usage: 'leader [step-down] [--reason R]   the replica that leads; step-down: it hands over to a stand-by (admin)',
  subcommands: ['step-down'],
  examples: ['lockkeeper leader', 'lockkeeper leader step-down --reason "patch the leader\'s host"'],
  mutations: ['stepDown'],
  async run(ctx) {
    const sub = ctx.args[0];
    if (sub === undefined) {
      const { leadership } = await ctx.client.request(DOCUMENTS.leadership, {});
      ctx.io.out(ctx.json ? json(leadership) : describe(leadership));
      return EXIT.DONE;
    }
    if (arg(ctx, 0, 'sub-command (step-down)') !== 'step-down') throw new UsageError(`unknown leader sub-command "${sub}" (step-down)`);
    const { result } = await ctx.client.request(DOCUMENTS.stepDown, { reason: stringOption(ctx, 'reason') ?? null });
    if (result.__typename !== 'Leadership') throw refused(result);
    ctx.io.out(ctx.json ? json(result) : `stepped down: ${describe(result)}`);
    return EXIT.DONE;
  },
};
