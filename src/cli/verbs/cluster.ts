/* eslint-disable @typescript-eslint/no-explicit-any -- results are read as the documents select them; test/cli/documents.test.ts validates every document against schema.graphql (rollout:T6) */
import { EXIT, refused } from '../client.ts';
import { DOCUMENTS } from '../documents.ts';
import { json, table } from '../output.ts';
import { arg, listOption, stringOption, UsageError, type Verb } from '../verb.ts';

const edges = <T>(c: { edges: { node: T }[] }) => c.edges.map((e) => e.node);

export const clusterVerbs: Verb[] = [
  {
    name: 'nodes',
    usage: 'nodes                      nodes with availability, policy, maintenance phase and running operation',
    async run(ctx) {
      const nodes = edges<any>((await ctx.client.request(DOCUMENTS.nodes)).nodes);
      if (ctx.json) ctx.io.out(json(nodes));
      else
        ctx.io.out(
          table(
            ['ID', 'NAME', 'ZONE', 'AVAILABILITY', 'CORDONED', 'POLICY', 'MAINTENANCE', 'OPERATION'],
            nodes.map((n) => [
              n.id,
              n.name,
              n.zone,
              n.availability,
              n.cordoned,
              n.schedulingPolicy,
              n.maintenancePhase,
              n.operation ? `${n.operation.kind} ${n.operation.state}` : null,
            ]),
          ),
        );
      return EXIT.DONE;
    },
  },
  {
    name: 'vms',
    usage: 'vms [--node N]             virtual machines, their strategy and migratability',
    options: { node: { type: 'string' } },
    async run(ctx) {
      const vms = edges<any>((await ctx.client.request(DOCUMENTS.vms, { nodeId: stringOption(ctx, 'node') ?? null })).vms);
      if (ctx.json) ctx.io.out(json(vms));
      else
        ctx.io.out(
          table(
            ['ID', 'STATUS', 'NODE', 'STRATEGY', 'RUN STRATEGY', 'MIGRATABLE'],
            vms.map((v) => [
              v.id,
              v.status,
              v.node?.id,
              v.maintenanceStrategy,
              v.runStrategy,
              v.migratable ? 'yes' : `no: ${v.nonMigratableReasons.join('; ')}`,
            ]),
          ),
        );
      return EXIT.DONE;
    },
  },
  {
    name: 'shards',
    usage: 'shards [--node N]          tenant shards, where attached and their secondaries',
    options: { node: { type: 'string' } },
    async run(ctx) {
      const shards = edges<any>((await ctx.client.request(DOCUMENTS.shards, { nodeId: stringOption(ctx, 'node') ?? null })).shards);
      if (ctx.json) ctx.io.out(json(shards));
      else
        ctx.io.out(
          table(
            ['ID', 'ATTACHED', 'SECONDARIES', 'PREFERRED ZONE', 'POLICY'],
            shards.map((s) => [s.id, s.attachedNodeId, s.secondaryNodeIds.join(','), s.preferredZone, s.policy]),
          ),
        );
      return EXIT.DONE;
    },
  },
  {
    name: 'events',
    usage: 'events [--after SEQ] [--follow]   the event log; --follow streams new events (resumes from the last seq)',
    options: { after: { type: 'string' }, follow: { type: 'boolean' } },
    async run(ctx) {
      const after = stringOption(ctx, 'after');
      const print = (e: any) =>
        ctx.io.out(ctx.json ? `${JSON.stringify(e)}\n` : `${e.seq}  ${new Date(e.at).toISOString()}  ${e.type}  ${e.nodeId ?? '-'}  ${e.payload}\n`);
      if (ctx.values.follow) {
        await ctx.client.subscribe<{ eventLog: any }>(DOCUMENTS.followEvents, { after: after === undefined ? null : Number(after) }, (d) => {
          print(d.eventLog);
        });
        return EXIT.DONE;
      }
      const page = (await ctx.client.request(DOCUMENTS.eventLog, { after: after === undefined ? null : Number(after) })).eventLog;
      if (ctx.json) ctx.io.out(json(page));
      else for (const e of page.events) print(e);
      return EXIT.DONE;
    },
  },
  {
    name: 'node',
    usage:
      'node policy <node> <POLICY> [--reason R]   set a storage node’s scheduling policy by hand (admin)\n' +
      'node confirm-down <node> [--reason R]       the node is really down: node-down handling may take it out of service (k8s:U7)',
    mutations: ['configureNode', 'confirmNodeDown'],
    async run(ctx) {
      const sub = arg(ctx, 0, 'sub-command (policy, confirm-down)');
      if (sub === 'confirm-down') {
        const nodeId = arg(ctx, 1, 'node id');
        const { result } = await ctx.client.request(DOCUMENTS.confirmNodeDown, { nodeId, reason: stringOption(ctx, 'reason') ?? null });
        if (result.__typename !== 'ClusterNode') throw refused(result);
        ctx.io.out(ctx.json ? json(result) : `node ${nodeId}: confirmed down; it is taken out of service once vmMigrationTimeout has passed\n`);
        return EXIT.DONE;
      }
      if (sub !== 'policy') throw new UsageError(`unknown node sub-command "${ctx.args[0]}"`);
      const result = (
        await ctx.client.request(DOCUMENTS.configureNode, {
          nodeId: arg(ctx, 1, 'node id'),
          policy: arg(ctx, 2, 'policy').toUpperCase(),
          reason: stringOption(ctx, 'reason') ?? null,
        })
      ).result;
      if (result.__typename !== 'ClusterNode') throw refused(result);
      ctx.io.out(ctx.json ? json(result) : `node ${result.id}: policy ${result.schedulingPolicy}\n`);
      return EXIT.DONE;
    },
  },
  {
    name: 'vm',
    usage: 'vm strategy <vm|-> <STRATEGY|-> [--namespace NS] [--label k=v]…   set (or with - remove) the maintenance strategy label',
    options: { namespace: { type: 'string' }, label: { type: 'string', multiple: true } },
    mutations: ['setVmMaintenanceStrategy'],
    async run(ctx) {
      if (arg(ctx, 0, 'sub-command (strategy)') !== 'strategy') throw new UsageError(`unknown vm sub-command "${ctx.args[0]}"`);
      const vm = arg(ctx, 1, 'VM id (namespace/name), or - with a selector');
      const strategy = arg(ctx, 2, 'strategy');
      const labels = listOption(ctx, 'label').map((l) => {
        const [key, ...rest] = l.split('=');
        if (!key || !rest.length) throw new UsageError(`--label ${l}: expected key=value`);
        return { key, value: rest.join('=') };
      });
      const namespace = stringOption(ctx, 'namespace');
      const selector = vm === '-' ? { ...(namespace && { namespace }), ...(labels.length && { labels }) } : null;
      const result = (
        await ctx.client.request(DOCUMENTS.setVmMaintenanceStrategy, {
          vmId: vm === '-' ? null : vm,
          selector,
          strategy: strategy === '-' ? null : strategy,
          reason: stringOption(ctx, 'reason') ?? null,
        })
      ).result;
      if (result.__typename !== 'SetVmMaintenanceStrategyResult') throw refused(result);
      if (ctx.json) ctx.io.out(json(result.vms));
      else
        ctx.io.out(
          table(
            ['VM', 'STRATEGY', 'LABEL'],
            result.vms.map((v: any) => [v.id, v.maintenanceStrategy, v.maintenanceStrategyLabel]),
          ),
        );
      return EXIT.DONE;
    },
  },
];
