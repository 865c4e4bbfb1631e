import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoTopology } from '../../plugins/fake/index.ts';
import { PROJECT_ROOT } from '../support/child-server.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';

/**
 * Issue 30, point 5: the README's force example lists every VM that force stops on the
 * demo's node 1 and what disable will not restart, as `maintenancePlan(force: true)` says.
 */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ topology: demoTopology() });
});
afterAll(async () => {
  await t?.stop();
});

/** The table's rows: VM, label, with force, restarted on disable. */
function readmeRows(): string[][] {
  const readme = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
  const block = /<!-- force-plan:node-1:begin -->\n([\s\S]*?)<!-- force-plan:node-1:end -->/.exec(readme)![1]!;
  return block
    .trim()
    .split('\n')
    .slice(2)
    .map((row) =>
      row
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim().replace(/`/g, '')),
    );
}

describe('the README’s force example (issue 30, point 5)', () => {
  it('lists every VM of node 1 with what force does to it and whether disable restarts it, as maintenancePlan(force: true) answers', async () => {
    const res = await t.gql(`{ maintenancePlan(nodeId: "1", force: true) { accepted vms { vmId action targetNodeId restart } }
      vms(first: 100, nodeId: "1") { edges { node { id maintenanceStrategyLabel } } } }`);
    expect(res.data.maintenancePlan.accepted).toBe(true);
    const labels = new Map<string, string | null>(
      res.data.vms.edges.map((e: { node: { id: string; maintenanceStrategyLabel: string | null } }) => [e.node.id, e.node.maintenanceStrategyLabel]),
    );
    const fromPlan = res.data.maintenancePlan.vms
      .map((v: { vmId: string; action: string; targetNodeId: string | null; restart: string | null }) => [
        v.vmId,
        labels.get(v.vmId) ?? '(none)',
        v.action === 'STOP' ? 'stopped' : v.action === 'MIGRATE' ? `migrated to node ${v.targetNodeId}` : v.action,
        v.action === 'STOP' ? (v.restart === 'NEVER' ? 'no' : 'yes') : '—',
      ])
      .sort((a: string[], b: string[]) => a[0]!.localeCompare(b[0]!));
    expect(readmeRows()).toEqual(fromPlan);
  });
});
