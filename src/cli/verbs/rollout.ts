/* eslint-disable @typescript-eslint/no-explicit-any -- results are read as the documents select them; test/cli/documents.test.ts validates every document against schema.graphql (rollout:T6) */
import { EXIT, refused } from '../client.ts';
import { DOCUMENTS } from '../documents.ts';
import { json, stamp, table } from '../output.ts';
import { rehearsalText } from '../rehearsal-report.ts';
import { watchOperation } from '../watch.ts';
import { ENUMS } from '../enums.ts';
import { arg, enumValue, listOption, parseSeconds, stringOption, UsageError, type Verb, type VerbContext } from '../verb.ts';
import { started } from './operations.ts';

/** `rollout plan|start` flags → StartRolloutInput (rollout:O1). */
function rolloutInput(ctx: VerbContext, nodes: string[]) {
  const zones = listOption(ctx, 'zone');
  const roles = listOption(ctx, 'role');
  const labels = listOption(ctx, 'label').map((l) => {
    const [key, ...rest] = l.split('=');
    if (!key || !rest.length) throw new UsageError(`--label ${l}: expected key=value`);
    return { key, value: rest.join('=') };
  });
  const selector =
    zones.length || roles.length || labels.length ? { ...(zones.length && { zones }), ...(roles.length && { roles }), ...(labels.length && { labels }) } : null;
  const num = (name: string) => (stringOption(ctx, name) === undefined ? undefined : Number(stringOption(ctx, name)));
  const deadline = stringOption(ctx, 'deadline');
  const settle = stringOption(ctx, 'settle');
  return {
    ...(nodes.length || !selector ? { nodes } : {}),
    ...(selector && { selector }),
    action: enumValue(stringOption(ctx, 'action') ?? 'MAINTENANCE', ENUMS.RolloutAction, '--action'),
    ...(stringOption(ctx, 'restart') && { restart: enumValue(stringOption(ctx, 'restart')!, ENUMS.RolloutRestart, '--restart') }),
    ...(num('max-unavailable') !== undefined && { maxUnavailable: num('max-unavailable') }),
    ...(stringOption(ctx, 'order') && { order: enumValue(stringOption(ctx, 'order')!, ENUMS.RolloutOrder, '--order') }),
    ...(ctx.values['no-pause-on-failure'] === true && { pauseOnFailure: false }),
    ...(settle !== undefined && { settleSeconds: parseSeconds(settle, 'settle') }),
    ...(ctx.values['allow-unsafe-restart'] === true && { allowUnsafeRestart: true }),
    ...(listOption(ctx, 'allow-unsafe-restart-on').length && { allowUnsafeRestartNodes: listOption(ctx, 'allow-unsafe-restart-on') }),
    ...(ctx.values.force === true && { force: true }),
    ...(deadline !== undefined && { deadlineSeconds: parseSeconds(deadline, 'deadline') }),
    ...(stringOption(ctx, 'reason') && { reason: stringOption(ctx, 'reason') }),
  };
}

/** How often `rollout rehearse` asks how far the rehearsal is (LOCKKEEPER_POLL_MS overrides: tests). */
const pollMs = (ctx: VerbContext) => Number(ctx.io.env.LOCKKEEPER_POLL_MS ?? 1000);

const integerOption = (ctx: VerbContext, name: string) => {
  const text = stringOption(ctx, name);
  if (text === undefined) return null;
  if (!/^\d+$/.test(text)) throw new UsageError(`--${name} ${text}: not a whole number`);
  return Number(text);
};

/** `rollout rehearse`: starts the rehearsal, follows it to its end, prints what it predicts (issue 33). */
async function rehearse(ctx: VerbContext): Promise<number> {
  const { result } = await ctx.client.request(DOCUMENTS.rehearseRollout, {
    input: rolloutInput(ctx, ctx.args.slice(1)),
    samples: integerOption(ctx, 'samples'),
    seed: integerOption(ctx, 'seed'),
  });
  if (result.__typename !== 'Rehearsal') throw refused(result);
  const { io } = ctx;
  const showProgress = !ctx.json;
  let last = '';
  let r = result;
  for (;;) {
    const line = `rehearsal ${r.id}: ${r.state !== 'RUNNING' ? r.state : `${r.progress?.done ?? 0}/${r.samples} sample(s)`}`;
    if (showProgress && line !== last) {
      if (io.isTTY) io.stream.write(`\r${line.padEnd(last.length)}`);
      else io.err(`${stamp(io.now())} ${line}\n`);
      last = line;
    }
    if (r.state !== 'RUNNING') break;
    await new Promise((resolve) => setTimeout(resolve, pollMs(ctx)));
    const read = (await ctx.client.request(DOCUMENTS.rehearsal, { id: r.id })).result;
    if (read.__typename !== 'Rehearsal') throw refused(read);
    r = read;
  }
  if (showProgress && io.isTTY) io.stream.write('\n');
  if (r.state === 'RUNNING' || !r.report) r = (await ctx.client.request(DOCUMENTS.rehearsal, { id: r.id })).result;
  io.out(ctx.json ? json(r) : rehearsalText(r));
  return r.state === 'SUCCEEDED' ? EXIT.DONE : EXIT.ENDED_BADLY;
}

async function control(ctx: VerbContext, mutation: 'pauseRollout' | 'resumeRollout' | 'cancelRollout' | 'continueRollout', variables: Record<string, unknown>) {
  const { result } = await ctx.client.request(DOCUMENTS[mutation], { ...variables, reason: stringOption(ctx, 'reason') ?? null });
  return started(ctx, result);
}

export const rolloutVerb: Verb = {
  name: 'rollout',
  usage: `rollout plan|start|rehearse [<node>…] [--zone Z]… [--role R]… [--label k=v]… [--action MAINTENANCE|DRAIN_FILL]
          [--restart WAIT_FOR_REATTACH|NONE|CONFIRM] [--max-unavailable N] [--order GIVEN|BY_ID|ZONE_BY_ZONE]
          [--settle 60s] [--force] [--deadline 30m] [--no-pause-on-failure] [--reason R] [--watch]
          [--allow-unsafe-restart (every node) | --allow-unsafe-restart-on <node>…]
          rehearse: [--samples N] [--seed S]; start: [--rehearsal <id>]
  rollout resume <rollout> [--allow-unsafe-restart (the node it paused on) | --allow-unsafe-restart-on <node>…]
  rollout pause|cancel|watch <rollout> [--reason R]
  rollout continue <rollout> <node>                      (restart CONFIRM: the node was restarted)`,
  subcommands: ['plan', 'start', 'rehearse', 'pause', 'resume', 'continue', 'cancel', 'watch'],
  options: {
    zone: { type: 'string', multiple: true, value: 'Z', description: 'plan/start: the nodes in this zone (repeatable)' },
    role: { type: 'string', multiple: true, value: 'R', description: 'plan/start: the nodes with this role (repeatable)' },
    label: { type: 'string', multiple: true, value: 'k=v', description: 'plan/start: the nodes carrying this label (repeatable: all must match)' },
    action: { type: 'string', value: 'A', values: ENUMS.RolloutAction, description: 'what is done to each node (default MAINTENANCE)' },
    restart: { type: 'string', value: 'R', values: ENUMS.RolloutRestart, description: 'how a node’s restart is awaited (default WAIT_FOR_REATTACH)' },
    'max-unavailable': { type: 'string', value: 'N', description: 'nodes out of service at once (default 1)' },
    order: { type: 'string', value: 'O', values: ENUMS.RolloutOrder, description: 'the order of the nodes (default GIVEN)' },
    settle: { type: 'string', value: 'D', description: 'wait this long after a node is back before the next (e.g. 60s, 2m)' },
    force: { type: 'boolean', description: 'maintenance with force: stop what cannot migrate' },
    deadline: { type: 'string', value: 'D', description: 'each node’s maintenance deadline (e.g. 30m)' },
    'no-pause-on-failure': { type: 'boolean', description: 'go on with the next node when one fails (default: pause)' },
    'allow-unsafe-restart': {
      type: 'boolean',
      description: 'hand a node over for restart although workloads remain on it (start: every node; resume: the node it paused on)',
    },
    'allow-unsafe-restart-on': { type: 'string', multiple: true, value: 'NODE', description: 'the same, for the nodes named only (repeatable)' },
    samples: { type: 'string', value: 'N', description: 'rehearse: seeded samples, 1–200 (default 20)' },
    seed: { type: 'string', value: 'S', description: 'rehearse: sample i runs with seed S+i (default random, printed)' },
    rehearsal: { type: 'string', value: 'ID', description: 'start: refuse when the cluster changed since this rehearsal in a way that changes the plan' },
    watch: { type: 'boolean', description: 'start/pause/resume/cancel: follow the rollout live until it ends or pauses (exit 4 when paused)' },
  },
  examples: [
    'lockkeeper rollout plan --zone zone-a --action drain-fill',
    'lockkeeper rollout start 1 2 3 --restart confirm --max-unavailable 1 --watch --reason "kernel 6.8"',
    'lockkeeper rollout rehearse --zone zone-a --max-unavailable 2 --samples 50',
    'lockkeeper rollout start --zone zone-a --max-unavailable 2 --rehearsal 9b2e…',
    'lockkeeper rollout continue 3f1c… 2',
  ],
  mutations: ['startRollout', 'rehearseRollout', 'pauseRollout', 'resumeRollout', 'continueRollout', 'cancelRollout'],
  async run(ctx) {
    const sub = arg(ctx, 0, 'sub-command (plan, start, rehearse, pause, resume, continue, cancel, watch)');
    switch (sub) {
      case 'plan': {
        const { result } = await ctx.client.request(DOCUMENTS.rolloutPlan, { input: rolloutInput(ctx, ctx.args.slice(1)) });
        if (result.__typename !== 'RolloutPlan') throw refused(result);
        if (ctx.json) ctx.io.out(json(result));
        else {
          ctx.io.out(`order: ${result.order.join(', ')}\n`);
          ctx.io.out(
            table(
              ['WAVE', 'NODE', 'PLAN'],
              result.nodes.map((n: any) => [
                n.wave,
                n.nodeId,
                n.maintenance
                  ? n.maintenance.accepted
                    ? 'maintenance accepted'
                    : `refused: ${n.maintenance.refusals.map((r: any) => r.message).join('; ')}`
                  : n.drainRefusal
                    ? `drain refused: ${n.drainRefusal}`
                    : n.drain
                      ? `drain: ${n.drain.filter((s: any) => s.action === 'CUT_OVER').length} cut-over(s), ${n.drain.filter((s: any) => s.action === 'SKIP').length} skipped`
                      : 'no shard attached: nothing to drain',
              ]),
            ),
          );
        }
        return EXIT.DONE;
      }
      case 'start': {
        const { result } = await ctx.client.request(DOCUMENTS.startRollout, {
          input: rolloutInput(ctx, ctx.args.slice(1)),
          rehearsal: stringOption(ctx, 'rehearsal') ?? null,
        });
        if (result.__typename === 'RehearsalStaleError')
          throw refused({ ...result, blockers: result.changes.map((c: any) => ({ id: c.code, reasons: [c.message] })) });
        return started(ctx, result);
      }
      case 'rehearse':
        return rehearse(ctx);
      case 'pause':
        return control(ctx, 'pauseRollout', { id: arg(ctx, 1, 'rollout id') });
      case 'resume':
        return control(ctx, 'resumeRollout', {
          id: arg(ctx, 1, 'rollout id'),
          allowUnsafeRestart: ctx.values['allow-unsafe-restart'] === true ? true : null,
          allowUnsafeRestartNodes: listOption(ctx, 'allow-unsafe-restart-on').length ? listOption(ctx, 'allow-unsafe-restart-on') : null,
        });
      case 'cancel':
        return control(ctx, 'cancelRollout', { id: arg(ctx, 1, 'rollout id') });
      case 'continue':
        return control(ctx, 'continueRollout', { id: arg(ctx, 1, 'rollout id'), nodeId: arg(ctx, 2, 'node id') });
      case 'watch':
        return watchOperation(ctx.client, arg(ctx, 1, 'rollout id'), ctx.io, { json: ctx.json });
      default:
        throw new UsageError(`unknown rollout sub-command "${sub}" (plan, start, rehearse, pause, resume, continue, cancel, watch)`);
    }
  },
};
