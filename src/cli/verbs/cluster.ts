/* eslint-disable @typescript-eslint/no-explicit-any -- results are read as the documents select them; test/cli/documents.test.ts validates every document against schema.graphql (rollout:T6) */
import { EXIT, refused } from '../client.ts';
import { DOCUMENTS } from '../documents.ts';
import { json, table } from '../output.ts';
import { arg, listOption, stringOption, UsageError, type Verb } from '../verb.ts';

const edges = <T>(c: { edges: { node: T }[] }) => c.edges.map((e) => e.node);

export const clusterVerbs: Verb[] = [
  {
    name: 'nodes',
    usage: 'nodes                      nodes with availability, policy, maintenance phase, running operation and whether each is safe to restart',
    async run(ctx) {
      const nodes = edges<any>((await ctx.client.request(DOCUMENTS.nodes)).nodes);
      if (ctx.json) ctx.io.out(json(nodes));
      else
        ctx.io.out(
          table(
            ['ID', 'NAME', 'ZONE', 'AVAILABILITY', 'CORDONED', 'POLICY', 'MAINTENANCE', 'OPERATION', 'SAFE TO RESTART'],
            nodes.map((n) => [
              n.id,
              n.name,
              n.zone,
              n.availability,
              n.cordoned,
              n.schedulingPolicy,
              n.maintenancePhase,
              n.operation ? `${n.operation.kind} ${n.operation.state}` : null,
              safety(n.remainingWorkloads),
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
        ctx.io.out(
          ctx.json ? `${JSON.stringify(e)}\n` : `${e.seq}  ${new Date(e.at).toISOString()}  ${e.type}  ${e.nodeId ?? '-'}  ${JSON.stringify(e.payload)}\n`,
        );
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
    usage: `node policy <node> <POLICY>              set a storage node’s scheduling policy by hand (admin)
  node availability <node> <AVAILABILITY>  ACTIVE, WARMING_UP or OFFLINE (fails its shards over; admin)
  node delete <node> [--force]             delete the node gracefully: its shards move, then it is tombstoned (admin)
  node cancel-delete <node>                stop a delete; the node gets its policy back (admin)
  node confirm-down <node>                 the node is really down: node-down handling may take it out of service (k8s:U7)`,
    options: { force: { type: 'boolean' } },
    mutations: ['configureNode', 'setNodeAvailability', 'startNodeDelete', 'cancelNodeDelete', 'confirmNodeDown'],
    async run(ctx) {
      const sub = arg(ctx, 0, 'sub-command (policy, availability, delete, cancel-delete, confirm-down)');
      const nodeId = arg(ctx, 1, 'node id');
      const reason = stringOption(ctx, 'reason') ?? null;
      if (sub === 'confirm-down') {
        const { result } = await ctx.client.request(DOCUMENTS.confirmNodeDown, { nodeId, reason });
        if (result.__typename !== 'ClusterNode') throw refused(result);
        ctx.io.out(ctx.json ? json(result) : `node ${nodeId}: confirmed down; it is taken out of service once vmMigrationTimeout has passed\n`);
        return EXIT.DONE;
      }
      if (sub === 'policy') {
        const result = (await ctx.client.request(DOCUMENTS.configureNode, { nodeId, policy: arg(ctx, 2, 'policy').toUpperCase(), reason })).result;
        if (result.__typename !== 'ClusterNode') throw refused(result);
        ctx.io.out(ctx.json ? json(result) : `node ${result.id}: policy ${result.schedulingPolicy}\n`);
        return EXIT.DONE;
      }
      if (sub === 'availability') {
        const availability = arg(ctx, 2, 'availability').toUpperCase().replace('-', '_');
        const result = (await ctx.client.request(DOCUMENTS.setNodeAvailability, { nodeId, availability, reason })).result;
        if (result.__typename !== 'ClusterNode') throw refused(result);
        ctx.io.out(ctx.json ? json(result) : `node ${result.id}: ${result.availability}\n`);
        return EXIT.DONE;
      }
      if (sub === 'delete' || sub === 'cancel-delete') {
        const result =
          sub === 'delete'
            ? (await ctx.client.request(DOCUMENTS.startNodeDelete, { nodeId, force: ctx.values.force === true, reason })).result
            : (await ctx.client.request(DOCUMENTS.cancelNodeDelete, { nodeId, reason })).result;
        if (result.__typename !== 'Operation') throw refused(result);
        ctx.io.out(ctx.json ? json(result) : `node ${nodeId}: ${result.kind} ${result.state} (operation ${result.id})\n`);
        return EXIT.DONE;
      }
      throw new UsageError(`unknown node sub-command "${sub}"`);
    },
  },
  {
    name: 'shard',
    usage: `shard migrate <shard> <node> [--no-prewarm] [--override-scheduler] [--origin N]   move its attachment (admin)
  shard migrate-secondary <shard> <node>   replace its secondaries by one on <node> (admin)
  shard cancel-reconcile <shard>           stop its reconcile in flight (admin)
  shard policy <tenant> [--policy P] [--secondaries N]   the tenant's shard policy and secondary count (admin)
  shard zone <shard>… [--zone Z]           set (without --zone: clear) the preferred zone (admin)`,
    options: {
      'no-prewarm': { type: 'boolean' },
      'override-scheduler': { type: 'boolean' },
      origin: { type: 'string' },
      policy: { type: 'string' },
      secondaries: { type: 'string' },
      zone: { type: 'string' },
    },
    mutations: ['migrateShard', 'migrateShardSecondary', 'cancelShardReconcile', 'setShardPolicy', 'setPreferredZone'],
    async run(ctx) {
      const sub = arg(ctx, 0, 'sub-command (migrate, migrate-secondary, cancel-reconcile, policy, zone)');
      const reason = stringOption(ctx, 'reason') ?? null;
      const printShards = (shards: any[]) =>
        ctx.io.out(
          ctx.json
            ? json(shards)
            : table(
                ['ID', 'ATTACHED', 'SECONDARIES', 'ZONE', 'POLICY', 'NOTIFY PENDING'],
                shards.map((s) => [s.id, s.attachedNodeId, s.secondaryNodeIds.join(','), s.preferredZone, s.policy, s.pendingComputeNotification]),
              ),
        );
      if (sub === 'migrate') {
        const result = (
          await ctx.client.request(DOCUMENTS.migrateShard, {
            shardId: arg(ctx, 1, 'shard id'),
            nodeId: arg(ctx, 2, 'node id'),
            originNodeId: stringOption(ctx, 'origin') ?? null,
            prewarm: ctx.values['no-prewarm'] !== true,
            overrideScheduler: ctx.values['override-scheduler'] === true,
            reason,
          })
        ).result;
        if (result.__typename !== 'ShardMigration') throw refused(result);
        if (ctx.json) ctx.io.out(json(result));
        else {
          printShards([result.shard]);
          if (result.operation) ctx.io.out(`the rest runs as operation ${result.operation.id} (${result.operation.kind})\n`);
        }
        return EXIT.DONE;
      }
      if (sub === 'migrate-secondary' || sub === 'cancel-reconcile') {
        const shardId = arg(ctx, 1, 'shard id');
        const result =
          sub === 'migrate-secondary'
            ? (await ctx.client.request(DOCUMENTS.migrateShardSecondary, { shardId, nodeId: arg(ctx, 2, 'node id'), reason })).result
            : (await ctx.client.request(DOCUMENTS.cancelShardReconcile, { shardId, reason })).result;
        if (result.__typename !== 'TenantShard') throw refused(result);
        printShards([result]);
        return EXIT.DONE;
      }
      if (sub === 'policy') {
        const secondaries = stringOption(ctx, 'secondaries');
        if (secondaries !== undefined && !/^\d+$/.test(secondaries)) throw new UsageError(`--secondaries ${secondaries}: not a number`);
        const result = (
          await ctx.client.request(DOCUMENTS.setShardPolicy, {
            tenantId: arg(ctx, 1, 'tenant id'),
            policy: stringOption(ctx, 'policy')?.toUpperCase() ?? null,
            secondaryCount: secondaries === undefined ? null : Number(secondaries),
            reason,
          })
        ).result;
        if (result.__typename !== 'ShardPolicyResult') throw refused(result);
        printShards(result.shards);
        return EXIT.DONE;
      }
      if (sub === 'zone') {
        const shardIds = ctx.args.slice(1);
        if (!shardIds.length) throw new UsageError('missing shard id');
        const result = (await ctx.client.request(DOCUMENTS.setPreferredZone, { shardIds, zone: stringOption(ctx, 'zone') ?? null, reason })).result;
        if (result.__typename !== 'PreferredZoneResult') throw refused(result);
        ctx.io.out(ctx.json ? json(result) : `updated: ${result.updated.join(', ') || '(none)'}\n`);
        return EXIT.DONE;
      }
      throw new UsageError(`unknown shard sub-command "${sub}"`);
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

/** "yes", or what remains: "no: 2 shard(s), 1 VM(s)". */
function safety(remaining: { kind: string }[]): string {
  if (!remaining.length) return 'yes';
  const byKind = new Map<string, number>();
  for (const w of remaining) byKind.set(w.kind, (byKind.get(w.kind) ?? 0) + 1);
  return `no: ${[...byKind].map(([kind, n]) => `${n} ${kind.toLowerCase()}(s)`).join(', ')}`;
}
