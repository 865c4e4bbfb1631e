/**
 * Honest metrics (issue 17 point 5): `/metrics` scraped over HTTP after a hyperconverged
 * maintenance, every figure checked against the operation's own steps and counts. VMs and
 * shards are counted apart, under the kind they really ran in (MAINTENANCE, not DRAIN),
 * skipped shards by reason, and the state gauges (availability, policy, maintenance phase,
 * operations by state) give one series per node and value.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/child-server.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { cluster, enable, maintenanceApp, untilPhase } from '../maintenance/harness.ts';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

const MiB = 1024 ** 2;
const on1 = (name: string, label: string | null = null) => ({ namespace: 'default', name, nodeId: '1', maintenanceStrategyLabel: label });

function hyperconverged() {
  return cluster(
    [
      on1('web'),
      on1('api', 'Migrate'),
      on1('after-enable', 'ShutdownAndRestartAfterEnable'),
      on1('after-disable', 'ShutdownAndRestartAfterDisable'),
      on1('off', 'Shutdown'),
      { namespace: 'default', name: 'elsewhere', nodeId: '2' },
    ],
    {
      shards: [
        { tenantId: 'a', attachedNodeId: '1', secondaries: [{ nodeId: '2' }] },
        { tenantId: 'b', attachedNodeId: '1', secondaries: [{ nodeId: '3' }] },
        { tenantId: 'lag', attachedNodeId: '1', secondaries: [{ nodeId: '2', lagBytes: 512 * MiB, downloadBytesPerSecond: 0 }] },
        { tenantId: 'paused', attachedNodeId: '1', secondaries: [{ nodeId: '3' }], policy: 'PAUSE' },
        { tenantId: 'other', attachedNodeId: '2', secondaries: [{ nodeId: '1' }] },
      ],
    },
  );
}

/** Every sample of the scrape by its series, e.g. `lockkeeper_shards_moved_total{kind="MAINTENANCE"}`. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

async function scrape(url: string): Promise<Map<string, number>> {
  const res = await fetch(url.replace(/\/graphql$/, '/metrics'));
  expect(res.status).toBe(200);
  return samples(await res.text());
}

function count<T>(items: T[], key: (item: T) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of items) out.set(key(item), (out.get(key(item)) ?? 0) + 1);
  return out;
}

describe('/metrics after a hyperconverged maintenance', () => {
  it('says what really happened: VMs and shards apart, under MAINTENANCE, skipped shards by reason, and the node state gauges', async () => {
    t = await maintenanceApp(hyperconverged(), { latenciesMs: { migrate: 500, stop: 200, start: 300, cordon: 10, cutOver: 100 } });
    const { url } = await t.app.start(0, '127.0.0.1');
    const op = await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    const done = (await t.app.operations.getOperation(op.id))!;
    expect(done.state).toBe('SUCCEEDED');
    const steps = await t.app.operations.getSteps(op.id);
    const vmSteps = steps.filter((s) => s.workloadKind === 'vm');
    const shardSteps = steps.filter((s) => s.workloadKind === 'shard');
    const m = await scrape(url);

    expect(m.get('lockkeeper_operations_started_total{kind="MAINTENANCE"}')).toBe(1);
    expect(m.get('lockkeeper_operations_finished_total{kind="MAINTENANCE",outcome="SUCCEEDED"}')).toBe(1);
    // Shards: counted under MAINTENANCE, never under DRAIN, and the plan's skips too.
    const shardMoved = shardSteps.filter((s) => s.state === 'MOVED').length;
    expect(shardMoved).toBe(2);
    expect(m.get('lockkeeper_shards_moved_total{kind="MAINTENANCE"}')).toBe(shardMoved);
    expect(m.get('lockkeeper_shards_moved_total{kind="DRAIN"}')).toBe(0);
    expect(m.get('lockkeeper_move_duration_seconds_count{kind="MAINTENANCE"}')).toBe(shardMoved);
    const skippedShards = count(
      shardSteps.filter((s) => s.state === 'SKIPPED'),
      (s) => s.reason!,
    );
    expect([...skippedShards.keys()].sort()).toEqual(['SECONDARY_LAGGING', 'SHARD_POLICY_PAUSE']);
    for (const [reason, n] of skippedShards) expect(m.get(`lockkeeper_shards_skipped_total{kind="MAINTENANCE",reason="${reason}"}`), reason).toBe(n);
    expect([...m.keys()].filter((k) => k.startsWith('lockkeeper_shards_skipped_total{kind="DRAIN"'))).toEqual([]);
    // VMs: by action and outcome, as the steps ended (a stop is STOPPED, not MOVED).
    const vmOutcomes = count(vmSteps, (s) => `${s.action} ${s.state}`);
    expect(Object.fromEntries(vmOutcomes)).toEqual({ 'MIGRATE MOVED': 2, 'STOP_AND_RESTART MOVED': 1, 'STOP STOPPED': 2 });
    for (const [key, n] of vmOutcomes) {
      const [action, outcome] = key.split(' ');
      expect(m.get(`lockkeeper_vms_handled_total{kind="MAINTENANCE",action="${action}",outcome="${outcome}"}`), key).toBe(n);
    }
    // The operation's counts say the same.
    expect(done.counts).toMatchObject({ moved: 2 + 1 + shardMoved, stopped: 2, skipped: 2, failed: 0 });

    // State gauges: one series per node and value, 1 for the current one.
    expect(m.get('lockkeeper_node_maintenance_phase{node="1",phase="COMPLETED"}')).toBe(1);
    expect(m.get('lockkeeper_node_maintenance_phase{node="1",phase="NONE"}')).toBe(0);
    expect(m.get('lockkeeper_node_maintenance_phase{node="2",phase="NONE"}')).toBe(1);
    expect([...m.keys()].filter((k) => k.startsWith('lockkeeper_node_maintenance_phase{node="1"'))).toHaveLength(6);
    expect(m.get('lockkeeper_node_scheduling_policy{node="1",policy="PAUSE_FOR_RESTART"}')).toBe(1);
    expect(m.get('lockkeeper_node_availability{node="1",availability="ACTIVE"}')).toBe(1);
    expect(m.get('lockkeeper_node_availability{node="1",availability="OFFLINE"}')).toBe(0);
    expect(m.get('lockkeeper_operations{kind="MAINTENANCE",state="SUCCEEDED"}')).toBe(1);
    expect(m.get('lockkeeper_operations{kind="MAINTENANCE",state="RUNNING"}')).toBe(0);
  });

  it('an ERROR phase and an OFFLINE node show in the gauges (what the README alert rule fires on)', async () => {
    t = await maintenanceApp(cluster([on1('stuck')]));
    const { url } = await t.app.start(0, '127.0.0.1');
    t.cluster.simulation.injectFaults({ stuck: ['default/stuck'] });
    await enable(t, '1', ', deadlineSeconds: 60');
    await untilPhase(t, '1', 'ERROR');
    await t.cluster.simulation.setNodeOnline('3', false);
    const m = await scrape(url);
    expect(m.get('lockkeeper_node_maintenance_phase{node="1",phase="ERROR"}')).toBe(1);
    expect(m.get('lockkeeper_node_maintenance_phase{node="1",phase="EVACUATING"}')).toBe(0);
    expect(m.get('lockkeeper_operations{kind="MAINTENANCE",state="FAILED"}')).toBe(1);
    expect(m.get('lockkeeper_node_availability{node="3",availability="OFFLINE"}')).toBe(1);

    // The alert rules of docs/operations.md (`expr: metric{label="value"} == 1`) fire on this scrape.
    const readme = readFileSync(`${PROJECT_ROOT}/docs/operations.md`, 'utf8');
    const rules = [...readme.matchAll(/expr: (lockkeeper_\w+)\{(\w+)="(\w+)"\} == 1/g)];
    expect(rules.map((r) => r[1])).toEqual(['lockkeeper_node_maintenance_phase', 'lockkeeper_node_availability']);
    for (const [, metric, label, value] of rules) {
      const firing = [...m].filter(([series, v]) => series.startsWith(`${metric}{`) && series.includes(`${label}="${value}"`) && v === 1);
      expect(firing.length, `${metric}{${label}="${value}"}`).toBe(1);
    }
  });
});
