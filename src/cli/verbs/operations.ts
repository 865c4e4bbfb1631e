/* eslint-disable @typescript-eslint/no-explicit-any -- results are read as the documents select them; test/cli/documents.test.ts validates every document against schema.graphql (rollout:T6) */
import { EXIT, refused, type GatewayClient } from '../client.ts';
import { DOCUMENTS } from '../documents.ts';
import { json, table, type CliIo } from '../output.ts';
import { watchOperation } from '../watch.ts';
import { ENUMS } from '../enums.ts';
import { etaText } from '../../domain/durations.ts';
import { arg, enumValue, parseSeconds, stringOption, UsageError, type FlagSpec, type Verb, type VerbContext } from '../verb.ts';

const WATCH: Record<string, FlagSpec> = {
  watch: {
    type: 'boolean',
    description: 'follow the operation live to its end: a progress bar on a terminal, timestamped lines otherwise; the exit code says how it ended',
  },
};

/** A start or cancel answered: print it, then follow it with --watch (rollout:T4). */
export async function started(ctx: VerbContext, result: any): Promise<number> {
  if (result.__typename !== 'Operation') throw refused(result);
  if (ctx.values.watch) return watchOperation(ctx.client, result.id, ctx.io, { json: ctx.json });
  ctx.io.out(ctx.json ? json(result) : `${result.kind.toLowerCase()} ${result.id}${result.nodeId ? ` on node ${result.nodeId}` : ''}: ${result.state}\n`);
  return EXIT.DONE;
}

function startVerb(name: 'drain' | 'fill', mutation: 'startNodeDrain' | 'startNodeFill', what: string): Verb {
  return {
    name,
    usage: `${`${name} <node> [--watch] [--reason R]`.padEnd(36)} ${what}`,
    options: WATCH,
    examples: [`lockkeeper ${name} 2 --watch --reason "kernel upgrade"`, `lockkeeper ${name} 2 --json`],
    mutations: [mutation],
    async run(ctx) {
      const { result } = await ctx.client.request(DOCUMENTS[mutation], { nodeId: arg(ctx, 0, 'node id'), reason: stringOption(ctx, 'reason') ?? null });
      return started(ctx, result);
    },
  };
}

async function printOperations(client: GatewayClient, io: CliIo, asJson: boolean, filter: { nodeId: string | null; states: string[] | null }) {
  const ops = (await client.request(DOCUMENTS.ops, filter)).operations.edges.map((e: any) => e.node);
  if (asJson) return io.out(json(ops));
  io.out(
    table(
      ['ID', 'KIND', 'NODE', 'STATE', 'DONE', 'SKIPPED', 'FAILED', 'TOTAL', 'ETA', 'WAITING ON'],
      ops.map((o: any) => [
        o.id,
        o.kind,
        o.nodeId,
        o.state,
        o.counts.moved,
        o.counts.skipped,
        o.counts.failed,
        o.counts.total,
        o.state === 'RUNNING' ? etaText(o) : null,
        o.waitingOn?.description,
      ]),
    ),
  );
}

export const operationVerbs: Verb[] = [
  startVerb('drain', 'startNodeDrain', 'move the node’s shards to their secondaries (ends PAUSE_FOR_RESTART)'),
  startVerb('fill', 'startNodeFill', 'bring shards back to the node'),
  {
    name: 'cancel',
    usage: 'cancel <node> [--force] [--reason R] cancel the drain or fill running on the node (--force: abandon the cut-overs in flight, end now)',
    options: { force: { type: 'boolean', description: 'abandon the cut-overs in flight and end now (they are rechecked later)' }, ...WATCH },
    examples: ['lockkeeper cancel 2 --reason "wrong node"', 'lockkeeper cancel 2 --force'],
    mutations: ['cancelNodeDrain', 'cancelNodeFill'],
    async run(ctx) {
      const nodeId = arg(ctx, 0, 'node id');
      const { node } = await ctx.client.request(DOCUMENTS.nodeOperation, { id: nodeId });
      if (node.__typename !== 'ClusterNode') throw refused(node);
      const kind = node.operation?.kind;
      if (kind !== 'DRAIN' && kind !== 'FILL') throw refused({ code: 'PRECONDITION_FAILED', message: `no drain or fill in progress on node ${nodeId}` });
      const { result } = await ctx.client.request(DOCUMENTS[kind === 'DRAIN' ? 'cancelNodeDrain' : 'cancelNodeFill'], {
        nodeId,
        reason: stringOption(ctx, 'reason') ?? null,
        force: ctx.values.force === true,
      });
      return started(ctx, result);
    },
  },
  {
    name: 'ops',
    usage: 'ops [--node N] [--state S]…  operations, newest first',
    options: {
      node: { type: 'string', value: 'N', description: 'only the operations on node N' },
      state: { type: 'string', multiple: true, value: 'S', values: ENUMS.OperationState, description: 'only operations in this state (repeatable)' },
    },
    examples: ['lockkeeper ops --state running', 'lockkeeper ops --node 2 --json'],
    async run(ctx) {
      const states = (ctx.values.state as string[] | undefined)?.map((s) => enumValue(s, ENUMS.OperationState, '--state')) ?? null;
      await printOperations(ctx.client, ctx.io, ctx.json, { nodeId: stringOption(ctx, 'node') ?? null, states });
      return EXIT.DONE;
    },
  },
  {
    name: 'watch',
    usage: 'watch <operation>          follow an operation live until it ends (a rollout: or pauses)',
    examples: ['lockkeeper watch 3f1c…', 'lockkeeper watch 3f1c… --json'],
    async run(ctx) {
      return watchOperation(ctx.client, arg(ctx, 0, 'operation id'), ctx.io, { json: ctx.json });
    },
  },
  {
    name: 'maintenance',
    usage: 'maintenance plan|enable|disable|clear-error <node> [--force] [--deadline 30m] [--reason R] [--watch]',
    subcommands: ['plan', 'enable', 'disable', 'clear-error'],
    options: {
      force: {
        type: 'boolean',
        description:
          'plan/enable: stop what cannot migrate (see `maintenance plan <node> --force` for every VM it stops); disable: end it although VMs stay stopped',
      },
      deadline: { type: 'string', value: 'D', description: 'enable: give up (ERROR) if the node is not empty by then, e.g. 30m or 1h30m' },
      ...WATCH,
    },
    examples: [
      'lockkeeper maintenance plan 1 --force',
      'lockkeeper maintenance enable 1 --watch --deadline 30m --reason bios',
      'lockkeeper maintenance disable 1 --watch',
    ],
    mutations: ['enableMaintenanceMode', 'disableMaintenanceMode', 'clearMaintenanceError'],
    async run(ctx) {
      const sub = arg(ctx, 0, 'sub-command (plan, enable, disable, clear-error)');
      const nodeId = arg(ctx, 1, 'node id');
      const reason = stringOption(ctx, 'reason') ?? null;
      const force = ctx.values.force === true;
      switch (sub) {
        case 'plan': {
          const plan = (await ctx.client.request(DOCUMENTS.maintenancePlan, { nodeId, force })).maintenancePlan;
          if (ctx.json) ctx.io.out(json(plan));
          else {
            ctx.io.out(`maintenance of node ${nodeId} would be ${plan.accepted ? 'accepted' : 'refused'}\n`);
            for (const r of plan.refusals)
              ctx.io.out(`refused: ${r.code}: ${r.message}${r.blockers.map((b: any) => `\n  ${b.id}: ${b.reasons.join('; ')}`).join('')}\n`);
            ctx.io.out(
              table(
                ['VM', 'STRATEGY', 'ACTION', 'TARGET', 'RESTART'],
                plan.vms.map((v: any) => [v.vmId, v.strategy, v.action, v.targetNodeId, v.restart]),
              ),
            );
            if (plan.shards.length)
              ctx.io.out(
                table(
                  ['SHARD', 'ACTION', 'TO', 'SKIP REASON'],
                  plan.shards.map((s: any) => [s.shardId, s.action, s.toNodeId, s.skipReason]),
                ),
              );
          }
          return plan.accepted ? EXIT.DONE : EXIT.REFUSED;
        }
        case 'enable': {
          const deadline = stringOption(ctx, 'deadline');
          const { result } = await ctx.client.request(DOCUMENTS.enableMaintenanceMode, {
            nodeId,
            force,
            deadlineSeconds: deadline === undefined ? null : parseSeconds(deadline, 'deadline'),
            reason,
          });
          return started(ctx, result);
        }
        case 'disable': {
          const { result } = await ctx.client.request(DOCUMENTS.disableMaintenanceMode, { nodeId, reason, force });
          if (result.__typename !== 'DisableMaintenanceResult') throw refused(result);
          if (ctx.json) ctx.io.out(json(result));
          else {
            ctx.io.out(`node ${nodeId} out of maintenance; restarted: ${result.restartedVmIds.join(', ') || 'none'}\n`);
            for (const f of result.failures) ctx.io.out(`restart of ${f.vmId} failed: ${f.message}\n`);
            for (const w of result.warnings) ctx.io.out(`warning: ${w}\n`);
          }
          if (ctx.values.watch && result.fillOperation) return watchOperation(ctx.client, result.fillOperation.id, ctx.io, { json: ctx.json });
          return result.failures.length ? EXIT.ENDED_BADLY : EXIT.DONE;
        }
        case 'clear-error': {
          const { result } = await ctx.client.request(DOCUMENTS.clearMaintenanceError, { nodeId, reason });
          if (result.__typename !== 'ClusterNode') throw refused(result);
          ctx.io.out(ctx.json ? json(result) : `node ${nodeId}: maintenance error cleared\n`);
          return EXIT.DONE;
        }
        default:
          throw new UsageError(`unknown maintenance sub-command "${sub}" (plan, enable, disable, clear-error)`);
      }
    },
  },
];
