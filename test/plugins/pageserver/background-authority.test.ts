/**
 * ha:L9 for the pageserver plugin's own background reconciles (neon:C14): a reconcile the
 * background pass started keeps the authority of the epoch it was started under, so when that
 * epoch ends mid-cut-over its request in flight is aborted and it sends nothing more — not even
 * the catch-up reads that a stand-by could otherwise send under its own `@standby/discovery`
 * tag — while the next epoch's requests go out. All on the virtual clock, the lease's
 * monotonic clock injected; the simulators' request log is the witness.
 */
import { afterEach, expect, it } from 'vitest';
import { EpochAuthority, issuingAuthority, standbyAuthority, underAuthority, type LeaseAuthority } from '../../../src/cluster/authority.ts';
import { shardIdOf, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import type { IntentStore } from '../../../plugins/pageserver/intent-store.ts';
import { until } from '../../support/child-server.ts';
import { closeAfterEach, startSimCluster } from '../../support/pageserver-cluster.ts';

const clusters = closeAfterEach(afterEach);
const SHARD: SimShardSpec = { tenant: 7, shardNumber: 0, shardCount: 1, attached: 1, secondaries: [2], generation: 4 };
const ID = shardIdOf(SHARD);

const epoch = (holder: string, n: number) => new EpochAuthority({ holder, epoch: n, monotonic: () => 0, deadline: () => Infinity, expired: () => {} });

it('ha:L9: a background cut-over started at epoch 7 is aborted mid-catch-up when epoch 7 ends and sends nothing more; epoch 8 reconciles; tags name /background and /run-<id>', async () => {
  const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [SHARD] }));
  const epoch7 = epoch('r1', 7);
  let current: LeaseAuthority = epoch7;
  const backend = await c.startController({}, { authority: () => issuingAuthority(() => current), mayAct: () => current.leads });
  await c.until(async () => (await backend.listNodes()).every((n) => n.availability === 'ACTIVE'), { what: 'every node ACTIVE' });

  // The intent moves the shard to node 2 with no reconcile of its own: only the background pass acts on it.
  const intents = (backend as unknown as { intents: IntentStore }).intents;
  await intents.update(intents.shards.get(ID)!, { attachedNodeId: '2', secondaryNodeIds: ['1'] });
  // Node 2 stays behind the baseline (wait_lsn answers 202), so the cut-over polls its timelines; the first poll is never answered.
  c.sim(2).holdCatchUp(ID, 3_600_000);
  c.sim(2).inject({ method: 'GET', path: /\/timeline$/, kind: 'timeout', times: 1 });
  const start = c.log.entries.length;
  backend.reconcileInBackground();
  const polling = () => c.log.entries.slice(start).find((e) => e.source === 'node 2' && e.method === 'GET' && e.path.endsWith('/timeline'));
  await c.until(() => polling() !== undefined, { what: 'the catch-up poll of node 2 in flight' });
  const inFlight = polling()!;
  expect(inFlight.status).toBeUndefined();
  expect(c.waiting()).toBe(1);
  // Everything the cut-over sent so far named epoch 7's background pass.
  const before = c.log.entries.slice(start).filter((e) => e.path !== '/v1/utilization');
  expect(before.map((e) => `${e.source} ${e.method} ${e.path.replace(/\/v1\/tenant\/[^/]+/, '/v1/tenant/:id')}`)).toEqual([
    'node 1 PUT /v1/tenant/:id/location_config',
    'node 1 GET /v1/tenant/:id/timeline',
    'node 2 POST /v1/tenant/:id/secondary/download',
    'node 2 PUT /v1/tenant/:id/location_config',
    'node 2 POST /v1/tenant/:id/wait_lsn',
    'node 2 GET /v1/tenant/:id/timeline',
  ]);
  expect(new Set(before.map((e) => e.sender))).toEqual(new Set(['r1@7/background']));

  // Step-down: the replica stands by and epoch 7 ends.
  current = standbyAuthority('r1');
  epoch7.end('stepped down');
  const stepDown = c.log.entries.length;
  // The poll in flight was aborted: the simulator no longer holds it, and it was never answered.
  await until(() => (c.waiting() === 0 ? true : undefined), 'the held poll aborted', 10_000, 1);
  expect(inFlight.status).toBeUndefined();
  // A minute of virtual time: without epoch 7 the cut-over would poll every 500 ms.
  await c.advance(60_000, 500);
  expect(c.log.entries.slice(stepDown).map((e) => `${e.source} ${e.method} ${e.path} from ${e.sender}`)).toEqual([]);

  // The next epoch (another replica's, in the same process for the test) reconciles the shard in the background.
  c.sim(2).endCatchUp(ID);
  current = epoch('r2', 8);
  const epoch8 = c.log.entries.length;
  backend.reconcileInBackground();
  await c.until(() => c.view()[ID]?.['2']?.startsWith('AttachedSingle') === true, { what: 'node 2 AttachedSingle under epoch 8' });
  const under8 = c.log.entries.slice(epoch8).filter((e) => e.path !== '/v1/utilization');
  expect(under8.length).toBeGreaterThan(0);
  expect(new Set(under8.map((e) => e.sender))).toEqual(new Set(['r2@8/background']));

  // An operation's run is named as such.
  const run = c.log.entries.length;
  await c.drive(underAuthority(current.forRun('op-1'), () => backend.placement.placeShard(ID, { attachedNodeId: '1', secondaryNodeIds: ['2'] })));
  const underRun = c.log.entries.slice(run).filter((e) => e.path !== '/v1/utilization');
  expect(underRun.some((e) => e.source === 'node 1' && e.method === 'PUT')).toBe(true);
  expect(new Set(underRun.map((e) => e.sender))).toEqual(new Set(['r2@8/run-op-1']));
  // Nothing of epoch 7 after its end, whatever came later.
  expect(c.log.entries.slice(stepDown).filter((e) => e.sender?.startsWith('r1@7/'))).toEqual([]);
});
