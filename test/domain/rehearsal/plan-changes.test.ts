import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  describeChanges,
  PLAN_CHANGE_CODES,
  planChanges,
  type PlanBasis,
  type PlanBasisNode,
  type PlanBasisPod,
  type PlanBasisShard,
  type PlanBasisVm,
  type PlanChange,
} from '../../../src/domain/rehearsal/plan-changes.ts';
import type { RolloutSettings } from '../../../src/domain/rollouts.ts';

const SETTINGS: RolloutSettings = {
  action: 'MAINTENANCE',
  restart: 'WAIT_FOR_REATTACH',
  maxUnavailable: 1,
  order: 'GIVEN',
  pauseOnFailure: true,
  settleSeconds: 0,
  allowUnsafeRestart: false,
  force: false,
  deadlineSeconds: null,
};

const node = (nodeId: string, over: Partial<PlanBasisNode> = {}): PlanBasisNode => ({
  nodeId,
  zone: 'a',
  roles: ['worker'],
  labels: { pool: 'blue', rack: 'r1' },
  availability: 'ACTIVE',
  cordoned: false,
  outOfService: null,
  refusals: [],
  vms: [],
  pods: [],
  shards: [],
  ...over,
});

const basis = (): PlanBasis => ({
  settings: { ...SETTINGS },
  selector: { labels: { pool: 'blue' } },
  order: ['node-1', 'node-2', 'node-3'],
  waves: [['node-1'], ['node-2'], ['node-3']],
  nodes: [
    node('node-1', {
      vms: [
        { id: 'vm-7', strategy: 'Migrate', nonMigratable: [], evictionStrategy: 'LiveMigrate', action: 'MIGRATE' },
        { id: 'vm-8', strategy: 'Shutdown', nonMigratable: [], evictionStrategy: null, action: 'STOP', restart: 'NEVER' },
      ],
      pods: [{ id: 'db/db-0', verdict: 'EVICT', pdb: 'db/pdb' }],
    }),
    node('node-2', { shards: [{ id: 't1-0001', state: 'PLANNED', reason: null }] }),
    node('node-3'),
    node('node-9', { labels: { pool: 'green' }, roles: ['control-plane', 'etcd'] }),
  ],
});

const change = (mutate: (b: PlanBasis) => void) => {
  const after = basis();
  mutate(after);
  return planChanges(basis(), after);
};

const nodeOf = (b: PlanBasis, id: string) => b.nodes.find((n) => n.nodeId === id)!;

describe('planChanges: what changes the plan', () => {
  it('nothing changed: no changes, whatever the key order', () => {
    const after = basis();
    after.selector = { labels: { pool: 'blue' } };
    after.settings = Object.fromEntries(Object.entries(SETTINGS).reverse()) as unknown as RolloutSettings;
    expect(planChanges(basis(), after)).toEqual([]);
    const before = basis();
    before.selector = { roles: ['worker'], labels: { pool: 'blue', tier: 'x' } };
    after.selector = { labels: { tier: 'x', pool: 'blue' }, roles: ['worker'] };
    expect(planChanges(before, after)).toEqual([]);
  });

  it('a VM that can no longer migrate, and what the plan would do with it', () => {
    expect(
      change((b) => {
        const vm: PlanBasisVm = {
          id: 'vm-7',
          strategy: 'Migrate',
          nonMigratable: ['NotLiveMigratable'],
          evictionStrategy: 'LiveMigrate',
          action: 'STOP',
          restart: 'NEVER',
        };
        nodeOf(b, 'node-1').vms![0] = vm;
      }),
    ).toEqual([
      {
        code: 'WORKLOAD_CHANGED',
        nodeId: 'node-1',
        workload: 'vm-7',
        message:
          'node-1: VM vm-7 is no longer migratable (NotLiveMigratable; was migratable, strategy Migrate); would be stopped (restart NEVER) (was live-migrated)',
      },
    ]);
  });

  it('strategy and eviction strategy of a VM', () => {
    expect(
      change((b) => {
        nodeOf(b, 'node-1').vms![0] = {
          id: 'vm-7',
          strategy: 'ShutdownAndRestartAfterDisable',
          nonMigratable: [],
          evictionStrategy: 'None',
          action: 'MIGRATE',
        };
      }).map((c) => c.message),
    ).toEqual(['node-1: VM vm-7 has maintenance strategy ShutdownAndRestartAfterDisable (was Migrate); has eviction strategy None (was LiveMigrate)']);
  });

  it('a VM moved to another node is named once, where it is now; new and gone workloads', () => {
    expect(
      change((b) => {
        const [vm7] = nodeOf(b, 'node-1').vms!.splice(0, 1);
        nodeOf(b, 'node-3').vms!.push(vm7!);
        nodeOf(b, 'node-1').pods = [];
        nodeOf(b, 'node-2').shards!.push({ id: 't2-0000', state: 'PLANNED', reason: null });
      }),
    ).toEqual([
      { code: 'WORKLOAD_REMOVED', nodeId: 'node-1', workload: 'db/db-0', message: 'node-1: pod db/db-0 is gone from there' },
      { code: 'WORKLOAD_ADDED', nodeId: 'node-2', workload: 't2-0000', message: 'node-2: shard t2-0000 is new there' },
      { code: 'WORKLOAD_MOVED', nodeId: 'node-3', workload: 'vm-7', message: 'node-3: VM vm-7 is now here (was on node-1)' },
    ]);
  });

  it('a pod newly covered by a PDB, or blocking the drain; a shard now skipped', () => {
    expect(
      change((b) => {
        const pod: PlanBasisPod = { id: 'db/db-0', verdict: 'ERROR:EMPTY_DIR', pdb: null };
        const shard: PlanBasisShard = { id: 't1-0001', state: 'SKIPPED', reason: 'SHARD_POLICY_PAUSE' };
        nodeOf(b, 'node-1').pods = [pod];
        nodeOf(b, 'node-2').shards = [shard];
      }).map((c) => [c.code, c.message]),
    ).toEqual([
      [
        'WORKLOAD_CHANGED',
        'node-1: pod db/db-0 would be a blocker (EMPTY_DIR) (was evicted); is covered by no PodDisruptionBudget (was PodDisruptionBudget db/pdb)',
      ],
      ['WORKLOAD_CHANGED', 'node-2: shard t1-0001 would be skipped (SHARD_POLICY_PAUSE) (was moved)'],
    ]);
  });

  it('nodes joining, leaving, going out of service, changing roles or a selector label; refusals', () => {
    expect(
      change((b) => {
        b.nodes = b.nodes.filter((n) => n.nodeId !== 'node-9');
        b.nodes.push(node('node-10', { cordoned: true }));
        Object.assign(nodeOf(b, 'node-2'), { availability: 'OFFLINE', outOfService: 'OFFLINE' });
        nodeOf(b, 'node-3').roles = ['worker', 'etcd'];
        nodeOf(b, 'node-3').labels = { pool: 'green', rack: 'r1' };
        nodeOf(b, 'node-1').refusals = ['NON_MIGRATABLE_VMS'];
      }),
    ).toEqual([
      {
        code: 'NODE_REFUSAL_CHANGED',
        nodeId: 'node-1',
        workload: null,
        message: 'node-1: its operation would now be refused (NON_MIGRATABLE_VMS) (was accepted)',
      },
      { code: 'NODE_STATE_CHANGED', nodeId: 'node-2', workload: null, message: 'node-2 is now OFFLINE, schedulable, OFFLINE (was ACTIVE, schedulable)' },
      {
        code: 'NODE_CHANGED',
        nodeId: 'node-3',
        workload: null,
        message: 'node-3: roles are now worker, etcd (were worker); label pool is now green (was blue)',
      },
      { code: 'NODE_REMOVED', nodeId: 'node-9', workload: null, message: 'node-9 left the cluster' },
      { code: 'NODE_ADDED', nodeId: 'node-10', workload: null, message: 'node-10 joined the cluster (ACTIVE, cordoned)' },
    ]);
  });

  it('settings, selector and waves', () => {
    expect(
      change((b) => {
        b.settings.maxUnavailable = 2;
        b.selector = { labels: { pool: 'blue' }, zones: ['a'] };
        b.waves = [['node-1', 'node-2'], ['node-3']];
      }).map((c) => [c.code, c.message]),
    ).toEqual([
      ['SETTINGS_CHANGED', 'maxUnavailable is now 2 (was 1)'],
      ['SETTINGS_CHANGED', 'the selector is now {"labels":{"pool":"blue"},"zones":["a"]} (was {"labels":{"pool":"blue"}})'],
      ['WAVES_CHANGED', 'the waves are now 1: node-1, node-2 | 2: node-3 (were 1: node-1 | 2: node-2 | 3: node-3)'],
    ]);
  });
});

describe('planChanges: what does not change the plan', () => {
  it('a label no selector names, a zone the plan does not use, roles in another order, the same shard plan', () => {
    expect(
      change((b) => {
        nodeOf(b, 'node-1').labels = { pool: 'blue', rack: 'r9', extra: 'x' };
        nodeOf(b, 'node-1').zone = 'b';
        nodeOf(b, 'node-9').roles = ['etcd', 'control-plane'];
        nodeOf(b, 'node-2').shards = [{ id: 't1-0001', state: 'PLANNED', reason: null }];
        nodeOf(b, 'node-1').refusals = [];
      }),
    ).toEqual([]);
  });

  it('a zone counts once the order or the selector uses zones', () => {
    const before = basis();
    before.settings.order = 'ZONE_BY_ZONE';
    const after = basis();
    after.settings.order = 'ZONE_BY_ZONE';
    nodeOf(after, 'node-3').zone = 'b';
    expect(planChanges(before, after).map((c) => c.message)).toEqual(['node-3: zone is now b (was a)']);
  });
});

describe('describeChanges', () => {
  const c = (message: string): PlanChange => ({ code: 'NODE_ADDED', nodeId: null, workload: null, message });

  it('says so when nothing changed, names up to three, counts the rest', () => {
    expect(describeChanges([])).toBe('the plan has not changed since the rehearsal');
    expect(describeChanges([c('one')])).toBe('the plan changed since the rehearsal (1 change): one');
    expect(describeChanges([c('one'), c('two'), c('three'), c('four'), c('five')])).toBe(
      'the plan changed since the rehearsal (5 changes): one; two; three; and 2 more',
    );
  });
});

describe('the codes', () => {
  it('each has a row in docs/rehearsal.md', () => {
    const doc = readFileSync(new URL('../../../docs/rehearsal.md', import.meta.url), 'utf8');
    const stale = doc.slice(doc.indexOf('## When a rehearsal is stale'));
    const documented = [...stale.matchAll(/^\| (.+?) \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`([A-Z_]+)`/g)].map((c) => c[1]));
    expect([...PLAN_CHANGE_CODES].sort()).toEqual([...new Set(documented)].sort());
  });
});
