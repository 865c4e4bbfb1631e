/**
 * Seeded mutants (issue 27 point 6): each breaks one rule the campaign's order invariants
 * check, in the gateway's own source as it is loaded, so that a campaign run with it shows the
 * invariant catching the break (`npm run campaign -- crash --backend pageserver --mutant NAME`;
 * test/e2e/campaign-mutants.test.ts). Nothing here is loaded unless a campaign asks for a
 * mutant: `mutant-loader.mjs` registers this module as a loader hook (`node --import`), ahead
 * of tsx, so it sees the TypeScript source before tsx compiles it.
 */

/**
 * name → the file, the text replaced (exactly once, or the load fails) and what the campaign must
 * then report; `also`: further edits of the same kind that the break needs.
 */
export const MUTANTS = {
  // neon:C6: the cut-over no longer waits for the destination to catch up.
  'no-catch-up': {
    file: 'plugins/pageserver/live-migration.ts',
    find: '  await awaitLsn(deps, run, shard, dest, baseline);\n',
    replace: '',
    caught: 'before its catch-up completed (neon:C6)',
  },
  // neon:C7/C8: the origin goes Secondary before the computes are told.
  'notify-after-origin': {
    file: 'plugins/pageserver/live-migration.ts',
    find: "  await notifyBlocking(deps, run, shard, origin, dest);\n\n  run.progress('ORIGIN_SECONDARY', `setting node ${origin} Secondary`, origin);\n  await putLocation(deps, run, shard, origin, 'Secondary', null);\n",
    replace:
      "  run.progress('ORIGIN_SECONDARY', `setting node ${origin} Secondary`, origin);\n  await putLocation(deps, run, shard, origin, 'Secondary', null);\n  await notifyBlocking(deps, run, shard, origin, dest);\n",
    caught: '(neon:C7, neon:C8)',
  },
  // neon:W10/W11: secondaries are sent a wiped tenant config (`{}`), as before issue 28.
  'wipe-secondary-config': {
    file: 'plugins/pageserver/location-calls.ts',
    find: '  return haAwareTenantConfig(shard.tenantConfig, locationHasSecondaries(mode, shard.secondaryCount, shard.secondaryNodeIds.length));\n',
    replace:
      "  return mode === 'Secondary' ? {} : haAwareTenantConfig(shard.tenantConfig, locationHasSecondaries(mode, shard.secondaryCount, shard.secondaryNodeIds.length));\n",
    caught: '(neon:W10, neon:W11)',
  },
  // neon:H9: a failover keeps the shard attached to its lost node. The campaign loses no node by
  // itself, so node 3 is also declared OFFLINE by every fifth heartbeat round it passes ACTIVE
  // (the next good round brings it back), which makes the failovers happen.
  'failover-onto-offline': {
    file: 'plugins/pageserver/backend.ts',
    find: "    return this.moves.place(shard, { attachedNodeId: toNodeId, secondaryNodeIds: secondaries }, { priority: 'normal', keepIntent: true, failover: true });\n",
    replace:
      "    return this.moves.place(shard, { attachedNodeId: fromNodeId, secondaryNodeIds: secondaries }, { priority: 'normal', keepIntent: true, failover: true });\n",
    also: [
      {
        file: 'plugins/pageserver/node-availability.ts',
        find: '        const verdict = heartbeatVerdict(node.hb, ok, endedAt, this.deps.limits);\n',
        replace:
          "        const verdict = nodeId === '3' && node.hb.availability === 'ACTIVE' && (this.flapRounds = (this.flapRounds ?? 0) + 1) % 5 === 0 ? 'offline' : heartbeatVerdict(node.hb, ok, endedAt, this.deps.limits);\n",
      },
    ],
    caught: 'when it was OFFLINE',
  },
  // rollout:O5: the budget lets one node more out.
  'budget-off-by-one': {
    file: 'src/domain/rollouts.ts',
    find: 'if (out.length + leaving.length > maxUnavailable) {',
    replace: 'if (out.length + leaving.length > maxUnavailable + 1) {',
    caught: '(rollout:O5)',
  },
};

let mutant;

export function initialize(data) {
  mutant = MUTANTS[data.name];
  if (!mutant) throw new Error(`unknown mutant ${data.name}: one of ${Object.keys(MUTANTS).join(', ')}`);
}

export async function load(url, context, nextLoad) {
  const result = await nextLoad(url, context);
  if (!url.startsWith('file:')) return result;
  const edits = [mutant, ...(mutant.also ?? [])].filter((e) => url.endsWith(`/${e.file}`));
  if (!edits.length) return result;
  let source = String(result.source);
  for (const e of edits) {
    if (source.split(e.find).length !== 2) throw new Error(`mutant: the text to replace is not in ${e.file} exactly once`);
    source = source.replace(e.find, e.replace);
  }
  return { ...result, source };
}
