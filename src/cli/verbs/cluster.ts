/* eslint-disable @typescript-eslint/no-explicit-any -- results are read as the documents select them; test/cli/documents.test.ts validates every document against schema.graphql (rollout:T6) */
import { EXIT, refused } from '../client.ts';
import { DOCUMENTS } from '../documents.ts';
import { json, table } from '../output.ts';
import { ENUMS, VM_STRATEGY_LABELS } from '../enums.ts';
import { arg, enumValue, listOption, stringOption, UsageError, type Verb } from '../verb.ts';

const edges = <T>(c: { edges: { node: T }[] }) => c.edges.map((e) => e.node);

export const clusterVerbs: Verb[] = [
  {
    name: 'nodes',
    usage: 'nodes                      nodes with availability, policy, maintenance phase, running operation and whether each is safe to restart',
    examples: ['lockkeeper nodes', "lockkeeper nodes --json | jq -r '.[] | select(.safeToRestart) | .id'"],
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
    options: { node: { type: 'string', value: 'N', description: 'only the VMs on node N' } },
    examples: ['lockkeeper vms', 'lockkeeper vms --node 1 --json'],
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
    options: { node: { type: 'string', value: 'N', description: 'only the shards attached to node N or with a secondary on it' } },
    examples: ['lockkeeper shards', 'lockkeeper shards --node 2'],
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
    options: {
      after: { type: 'string', value: 'SEQ', description: 'only the events after this sequence number' },
      follow: { type: 'boolean', description: 'keep streaming new events (over WebSocket) until interrupted' },
    },
    examples: ['lockkeeper events --after 100', 'lockkeeper events --follow --json | jq .type'],
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
    subcommands: ['policy', 'availability', 'delete', 'cancel-delete', 'confirm-down'],
    options: { force: { type: 'boolean', description: 'delete: skip the shards that cannot move instead of refusing' } },
    examples: [
      'lockkeeper node policy 2 active --reason "back from repair"',
      'lockkeeper node availability 3 offline',
      'lockkeeper node delete 4 --reason decommission',
    ],
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
        const policy = enumValue(arg(ctx, 2, 'policy'), ENUMS.SchedulingPolicy, 'policy');
        const result = (await ctx.client.request(DOCUMENTS.configureNode, { nodeId, policy, reason })).result;
        if (result.__typename !== 'ClusterNode') throw refused(result);
        ctx.io.out(ctx.json ? json(result) : `node ${result.id}: policy ${result.schedulingPolicy}\n`);
        return EXIT.DONE;
      }
      if (sub === 'availability') {
        const availability = enumValue(arg(ctx, 2, 'availability'), ENUMS.NodeAvailability, 'availability');
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
      throw new UsageError(`unknown node sub-command "${sub}" (policy, availability, delete, cancel-delete, confirm-down)`);
    },
  },
  {
    name: 'shard',
    usage: `shard migrate <shard> <node> [--no-prewarm] [--override-scheduler] [--origin N]   move its attachment (admin)
  shard migrate-secondary <shard> <node>   replace its secondaries by one on <node> (admin)
  shard cancel-reconcile <shard>           stop its reconcile in flight (admin)
  shard policy <tenant> [--policy P] [--secondaries N]   the tenant's shard policy and secondary count (admin)
  shard zone <shard>… [--zone Z]           set (without --zone: clear) the preferred zone (admin)
  shard config <tenant> [--set JSON | --patch JSON]   the tenant's config, sent with every location_config (admin)`,
    subcommands: ['migrate', 'migrate-secondary', 'cancel-reconcile', 'policy', 'zone', 'config'],
    options: {
      'no-prewarm': { type: 'boolean', description: 'migrate: cut over at once, without warming a secondary on the target first' },
      'override-scheduler': { type: 'boolean', description: 'migrate: to a node the scheduler would not choose' },
      origin: { type: 'string', value: 'N', description: 'migrate: the node the shard is expected to be attached to (refused if it moved)' },
      policy: { type: 'string', value: 'P', values: ENUMS.ShardSchedulingPolicy, description: 'policy: the tenant’s shard scheduling policy' },
      secondaries: { type: 'string', value: 'N', description: 'policy: how many secondaries each shard keeps' },
      zone: { type: 'string', value: 'Z', description: 'zone: the preferred availability zone (none: clear it)' },
      set: { type: 'string', value: 'JSON', description: 'config: replace the tenant’s whole config by this JSON object' },
      patch: { type: 'string', value: 'JSON', description: 'config: change only the fields given (null removes one), as Neon’s PATCH' },
    },
    examples: [
      'lockkeeper shard migrate t1-0001 3 --reason rebalance',
      'lockkeeper shard policy t1 --policy essential --secondaries 2',
      'lockkeeper shard zone t1-0001 t1-0002 --zone zone-b',
      `lockkeeper shard config t1 --patch '{"pitr_interval": "7 days"}'`,
    ],
    mutations: ['migrateShard', 'migrateShardSecondary', 'cancelShardReconcile', 'setShardPolicy', 'setPreferredZone', 'setTenantConfig'],
    async run(ctx) {
      const sub = arg(ctx, 0, 'sub-command (migrate, migrate-secondary, cancel-reconcile, policy, zone, config)');
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
            policy: stringOption(ctx, 'policy') === undefined ? null : enumValue(stringOption(ctx, 'policy')!, ENUMS.ShardSchedulingPolicy, '--policy'),
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
      if (sub === 'config') {
        const tenantId = arg(ctx, 1, 'tenant id');
        const set = stringOption(ctx, 'set');
        const patch = stringOption(ctx, 'patch');
        if (set !== undefined && patch !== undefined) throw new UsageError('give --set or --patch, not both');
        const given = set ?? patch;
        let config: unknown;
        if (given !== undefined) {
          try {
            config = JSON.parse(given);
          } catch {
            throw new UsageError(`--${set !== undefined ? 'set' : 'patch'}: not JSON: ${given}`);
          }
          if (!config || typeof config !== 'object' || Array.isArray(config)) throw new UsageError('the tenant config must be a JSON object');
        }
        const result =
          given === undefined
            ? (await ctx.client.request(DOCUMENTS.tenantConfig, { tenantId })).result
            : (await ctx.client.request(DOCUMENTS.setTenantConfig, { tenantId, config, mode: set !== undefined ? 'REPLACE' : 'PATCH', reason })).result;
        if (result.__typename !== 'TenantConfigResult') throw refused(result);
        ctx.io.out(ctx.json ? json(result) : `${JSON.stringify(result.config, null, 2)}\n`);
        return EXIT.DONE;
      }
      throw new UsageError(`unknown shard sub-command "${sub}" (migrate, migrate-secondary, cancel-reconcile, policy, zone, config)`);
    },
  },
  {
    name: 'vm',
    usage: 'vm strategy <vm|-> <STRATEGY|-> [--namespace NS] [--label k=v]…   set (or with - remove) the maintenance strategy label',
    subcommands: ['strategy'],
    options: {
      namespace: { type: 'string', value: 'NS', description: 'with -: every VM in the namespace' },
      label: { type: 'string', multiple: true, value: 'k=v', description: 'with -: every VM carrying the label (repeatable: all must match)' },
    },
    examples: [
      'lockkeeper vm strategy prod/ledger shutdown',
      'lockkeeper vm strategy - SHUTDOWN_AND_RESTART_AFTER_DISABLE --namespace batch',
      'lockkeeper vm strategy prod/ledger -',
    ],
    mutations: ['setVmMaintenanceStrategy'],
    async run(ctx) {
      if (arg(ctx, 0, 'sub-command (strategy)') !== 'strategy') throw new UsageError(`unknown vm sub-command "${ctx.args[0]}" (strategy)`);
      const vm = arg(ctx, 1, 'VM id (namespace/name), or - with a selector');
      const given = arg(ctx, 2, 'strategy');
      const strategy = given === '-' ? '-' : enumValue(given, VM_STRATEGY_LABELS, 'strategy');
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
