import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import type { DurationSampler } from '../../src/domain/rehearsal/types.ts';
import { readHistory } from '../../src/rehearsal/history-read.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { createKubevirtBackend } from '../../plugins/kubevirt/index.ts';
import { runSamples } from '../../rehearsal/run-samples.ts';
import { K8sSim } from '../../simulators/kubernetes/index.ts';

let db: Database | null = null;
let dir: string | null = null;
afterEach(async () => {
  await db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  db = dir = null;
});

/** Three nodes; on n1 a VM and two pods of a StatefulSet under a budget that allows one disruption. */
async function snapshot(): Promise<BackendSnapshot> {
  const live = await K8sSim.start();
  try {
    for (const n of ['n1', 'n2', 'n3']) live.addNode(n, { zone: 'zone-a' });
    live.addVm({ name: 'mover', nodeName: 'n1' });
    for (const name of ['kv-0', 'kv-1']) live.addPod({ name, nodeName: 'n1', labels: { app: 'kv' }, owner: { kind: 'StatefulSet', name: 'kv' } });
    live.addPdb('default', 'kv', { matchLabels: { app: 'kv' }, maxUnavailable: 1 });
    const backend = await createKubevirtBackend({ kubeconfigPath: live.kubeconfigFile() });
    try {
      return JSON.parse(JSON.stringify((await backend.snapshot())[0])) as BackendSnapshot;
    } finally {
      await backend.close();
    }
  } finally {
    await live.close();
  }
}

/** Each pod terminates in its own time; the rest takes a fixed minute. */
const sampler: DurationSampler = {
  draw: (action, workloadId) => ({ ms: action !== 'POD_EVICT' ? 60_000 : workloadId === 'default/kv-0' ? 20_000 : 45_000, source: 'WORKLOAD' }),
};

describe("rehearsal history: the pod drain's evictions on the kubevirt simulator (issue 33)", () => {
  it('a real maintenance logs each eviction and its pod gone: the history holds POD_EVICT per pod, as long as the termination took', async () => {
    dir = mkdtempSync(join(tmpdir(), 'lk-kv-history-'));
    db = await openDatabase({ url: `file:${join(dir, 'h.db')}` });
    const [sample] = await runSamples(
      {
        config: { plugins: [{ name: 'kubevirt', options: {} }], operations: DEFAULT_CONFIG.operations },
        snapshots: [await snapshot()],
        history: [],
        input: { nodes: ['n1'], action: 'MAINTENANCE', maxUnavailable: 1 },
        samples: 1,
        seed: 1,
      },
      undefined,
      { sampler: () => sampler, database: db },
    );
    expect(sample!.outcome).toBe('SUCCEEDED');
    const evictions = (await readHistory(db.prisma)).filter((r) => r.action === 'POD_EVICT').sort((a, b) => a.workloadId.localeCompare(b.workloadId));
    expect(evictions.map((r) => [r.workloadId, r.nodeId])).toEqual([
      ['default/kv-0', 'n1'],
      ['default/kv-1', 'n1'],
    ]);
    // Seen gone by the drain's poll (every second) after the termination drawn; kv-1's eviction was refused (the budget) until kv-0
    // was back, and counts from its accepted eviction.
    const [kv0, kv1] = evictions;
    expect(kv0!.durationMs).toBeGreaterThanOrEqual(20_000);
    expect(kv0!.durationMs).toBeLessThanOrEqual(21_000);
    expect(kv1!.durationMs).toBeGreaterThanOrEqual(45_000);
    expect(kv1!.durationMs).toBeLessThanOrEqual(46_000);
  });
});
