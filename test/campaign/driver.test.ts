/**
 * The campaign's driver and a rollout the safety gate paused (pageserver fault campaign, seed 1
 * round 2): the campaign starts its rollouts with `pauseOnFailure: false`, but rollout:O6 pauses
 * whatever that says when a drain left a shard attached (a cut-over an injected 503 failed before
 * its generation). The driver took PAUSED for an end, gave up on the round and left the rollout
 * paused for good: every later round then found it not ended. It now answers as an operator does
 * (rollout:scenario-3): move what blocks the restart, then resume. The gateway here is a script of
 * the answers a real one gives, so each decision of the driver is seen on its own.
 */
import { describe, expect, it } from 'vitest';
import type { CampaignCluster } from '../../campaign/cluster.ts';
import { Driver, type Task } from '../../campaign/driver.ts';
import type { Ledger } from '../../campaign/invariants.ts';

interface Gateway {
  /** Where each shard is attached, and its secondaries. */
  shards: Map<string, { attachedNodeId: string; secondaryNodeIds: string[] }>;
  /** What holds node 1 at the gate. */
  blockers: string[];
  state: 'PAUSED' | 'RUNNING' | 'SUCCEEDED';
  mutations: string[];
}

/** A driver whose GraphQL requests a scripted gateway answers: a rollout of nodes 1 and 2 paused at node 1's safety gate. */
function scripted(gateway: Gateway): Driver {
  const ledger: Ledger = { initialRunStrategy: new Map(), startedOperations: new Set(), namedFailures: new Set() };
  const driver = new Driver({} as CampaignCluster, ledger, () => {});
  let started = false;
  driver.gql = async (query: string) => {
    if (query.startsWith('mutation')) gateway.mutations.push(query.replace(/\s+/g, ' '));
    if (query.includes('operations(first: 1000, kind: ROLLOUT)')) return { operations: { edges: started ? [{ node: { id: 'r1' } }] : [] } };
    if (query.includes('configureNode')) return { r: { __typename: 'ClusterNode' } };
    if (query.includes('startRollout')) {
      started = true;
      return { r: { __typename: 'Operation', id: 'r1' } };
    }
    if (query.includes('operation(id: "r1")')) {
      const held = gateway.state === 'PAUSED';
      return {
        operation: {
          state: gateway.state,
          error: null,
          waitingOn: held ? { kind: 'PAUSED' } : null,
          rollout: {
            nodes: [
              { nodeId: '1', phase: held ? 'UNSAFE_TO_RESTART' : 'DONE', blockers: held ? gateway.blockers.map((id) => ({ id })) : [] },
              { nodeId: '2', phase: held ? 'PENDING' : 'DONE', blockers: [] },
            ],
          },
        },
      };
    }
    const shardQuery = /s: shard\(id: "([^"]+)"\)/.exec(query);
    if (shardQuery) {
      const s = gateway.shards.get(shardQuery[1]!);
      return { s: s ? { __typename: 'TenantShard', ...s } : { __typename: 'NotFoundError' } };
    }
    const migrate = /migrateShard\(shardId: "([^"]+)", nodeId: "([^"]+)"/.exec(query);
    if (migrate) {
      const s = gateway.shards.get(migrate[1]!)!;
      gateway.shards.set(migrate[1]!, { attachedNodeId: migrate[2]!, secondaryNodeIds: [s.attachedNodeId] });
      return { r: { __typename: 'ShardMigration', operation: null } };
    }
    if (query.includes('resumeRollout')) {
      // The gate looks again: still held while a blocker is attached to node 1 and no override covers it.
      const overridden = query.includes('allowUnsafeRestart: true');
      const stillHeld = gateway.blockers.some((b) => (gateway.shards.get(b)?.attachedNodeId ?? '1') === '1');
      gateway.state = stillHeld && !overridden ? 'PAUSED' : 'SUCCEEDED';
      return { r: { __typename: 'Operation', id: 'r1' } };
    }
    throw new Error(`the scripted gateway has no answer for ${query}`);
  };
  return driver;
}

const rollout: Task = { kind: 'rollout', action: 'DRAIN_FILL', restart: 'WAIT_FOR_REATTACH', nodeId: '1', secondNodeId: '2', heldNodeId: '3' };

describe('campaign driver: a rollout the safety gate paused (rollout:O6)', () => {
  it('moves the shard that blocks the restart to its secondary, then resumes without an override; the rollout ends', async () => {
    const gateway: Gateway = {
      shards: new Map([['t1-0004', { attachedNodeId: '1', secondaryNodeIds: ['3'] }]]),
      blockers: ['t1-0004'],
      state: 'PAUSED',
      mutations: [],
    };
    const done = await scripted(gateway).run(rollout, Date.now() + 60_000);
    expect(done).toBe(true);
    expect(gateway.state).toBe('SUCCEEDED');
    expect(gateway.shards.get('t1-0004')).toEqual({ attachedNodeId: '3', secondaryNodeIds: ['1'] });
    const acts = gateway.mutations.filter((m) => /migrateShard|resumeRollout/.test(m));
    expect(acts).toHaveLength(2);
    expect(acts[0]).toContain('migrateShard(shardId: "t1-0004", nodeId: "3", prewarm: false');
    expect(acts[1]).toContain('resumeRollout(id: "r1", reason: "campaign")');
  });

  it('a blocker that is not a shard (a VM still running) is restarted past with the override for the paused node alone (rollout:O12)', async () => {
    const gateway: Gateway = { shards: new Map(), blockers: ['default/vm-1-0'], state: 'PAUSED', mutations: [] };
    const done = await scripted(gateway).run(rollout, Date.now() + 60_000);
    expect(done).toBe(true);
    const acts = gateway.mutations.filter((m) => /migrateShard|resumeRollout/.test(m));
    expect(acts).toEqual([expect.stringContaining('resumeRollout(id: "r1", allowUnsafeRestart: true, reason: "campaign")')]);
  });

  it('a paused rollout the campaign cannot get going is reported by its deadline, not waited on for ever', async () => {
    // A gateway that keeps the rollout paused whatever is said to it.
    const gateway: Gateway = {
      shards: new Map([['t1-0004', { attachedNodeId: '1', secondaryNodeIds: [] }]]),
      blockers: ['t1-0004'],
      state: 'PAUSED',
      mutations: [],
    };
    const driver = scripted(gateway);
    const resume = driver.gql.bind(driver);
    driver.gql = async (q: string) => (q.includes('resumeRollout') ? { r: { __typename: 'Operation', id: 'r1' } } : resume(q));
    const done = await driver.run(rollout, Date.now() + 1_500);
    expect(done).toBe(false);
    expect(gateway.state).toBe('PAUSED');
  });
});
