/**
 * `lockkeeper rollout rehearse` and `rollout start --rehearsal` (issue 33): the table and the
 * timeline of a stored report, and the verb against a gateway whose worker is a test double
 * (the documents go through the real schema and the real rehearsal service). The output is
 * docs/rehearsal.md's example; docs/runbook.md's "Rehearse before a rollout" uses the verbs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CliError, type GatewayClient } from '../../src/cli/client.ts';
import type { CliIo } from '../../src/cli/output.ts';
import { rehearsalText } from '../../src/cli/rehearsal-report.ts';
import { rolloutVerb } from '../../src/cli/verbs/rollout.ts';
import { rolloutApp, twoZoneCluster } from '../rollouts/harness.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { sample, workerDouble } from '../rehearsal/doubles.ts';

const STORED = {
  id: 'r-1',
  state: 'SUCCEEDED',
  samples: 20,
  seed: 7,
  summary: 'MAINTENANCE of node(s) 1, 2, 3, maxUnavailable 1, restart WAIT_FOR_REATTACH',
  error: null,
  report: {
    samples: 20,
    duration: { p10: 3000, p50: 3600, p90: 4800 },
    peakNodesOut: 1,
    waves: [
      { wave: 1, nodeIds: ['1'], start: { p10: 0, p50: 0, p90: 0 }, duration: { p10: 900, p50: 1200, p90: 1500 } },
      { wave: 2, nodeIds: ['2'], start: { p10: 900, p50: 1200, p90: 1500 }, duration: { p10: 1000, p50: 1200, p90: 1800 } },
      { wave: 3, nodeIds: ['3'], start: { p10: 1900, p50: 2400, p90: 3300 }, duration: { p10: 1100, p50: 1200, p90: 1500 } },
    ],
    nodes: [
      { nodeId: '1', wave: 1, duration: { p10: 900, p50: 1200, p90: 1500 }, leftOnNode: [], safeToRestart: true },
      { nodeId: '2', wave: 2, duration: { p10: 1000, p50: 1200, p90: 1800 }, leftOnNode: ['prod/pinned'], safeToRestart: false },
      { nodeId: '3', wave: 3, duration: null, leftOnNode: [], safeToRestart: null },
    ],
    pauses: [
      { reason: 'VM_NOT_MIGRATABLE', nodeId: '2', workload: 'prod/pinned', message: 'prod/pinned cannot live-migrate', probability: 1, typicalAtSeconds: 1260 },
      {
        reason: 'PDB',
        nodeId: '3',
        workload: 'prod/web-pdb',
        message: 'the PDB holds the eviction past its deadline',
        probability: 0.35,
        typicalAtSeconds: 2700,
      },
    ],
    vmsLeftStopped: [{ vmId: 'prod/batch', probability: 0.5 }],
    outcomes: { succeeded: 18, failed: 0, cancelled: 0, gaveUp: 2 },
    durationSources: { workload: 40, node: 10, cluster: 5, default: 3 },
  },
};

describe('rollout rehearse output', () => {
  it('prints the totals, a table per wave and node, the pauses with probability and reason, VMs left stopped, and the waves on a time axis', () => {
    expect(rehearsalText(STORED).split('\n')).toEqual([
      'rehearsal r-1: SUCCEEDED (20 sample(s), seed 7) — MAINTENANCE of node(s) 1, 2, 3, maxUnavailable 1, restart WAIT_FOR_REATTACH',
      "total (p10 / p50 / p90): 50m00s / 1h00m / 1h20m   peak nodes out: 1   samples: 18 succeeded, 2 gave up, 0 failed; 3 duration(s) from the backend's defaults, no history",
      '',
      'WAVE  NODES  STARTS AT (p50)  DURATION p10 / p50 / p90',
      '1     1      0s               15m00s / 20m00s / 25m00s',
      '2     2      20m00s           16m40s / 20m00s / 30m00s',
      '3     3      40m00s           18m20s / 20m00s / 25m00s',
      '',
      'NODE  WAVE  DURATION p10 / p50 / p90  SAFE TO RESTART  LEFT ON NODE',
      '1     1     15m00s / 20m00s / 25m00s  yes              nothing',
      '2     2     16m40s / 20m00s / 30m00s  no               prod/pinned',
      '3     3     -                         -                nothing',
      '',
      'PAUSE              PROBABILITY  AT (p50)  NODE  WORKLOAD      WHY',
      'VM_NOT_MIGRATABLE  100%         21m00s    2     prod/pinned   prod/pinned cannot live-migrate',
      'PDB                35%          45m00s    3     prod/web-pdb  the PDB holds the eviction past its deadline',
      '',
      'VMs left stopped: prod/batch (50%)',
      '',
      // The axis ends at 1h20m (p90): 60 columns, 80 s each; `·` runs to the wave's p90 end.
      `wave 1 |${'█'.repeat(15)}${'·'.repeat(4)}${' '.repeat(41)}| 1`,
      `wave 2 |${' '.repeat(15)}${'█'.repeat(15)}${'·'.repeat(8)}${' '.repeat(22)}| 2`,
      `wave 3 |${' '.repeat(30)}${'█'.repeat(15)}${'·'.repeat(4)}${' '.repeat(11)}| 3`,
      `       ${'0'.padEnd(30)}${'40m00s'.padEnd(30)}1h20m`,
      '',
    ]);
  });

  it('says how a rehearsal failed, with no report', () => {
    expect(rehearsalText({ ...STORED, state: 'FAILED', report: null, error: 'interrupted by a restart' })).toBe(
      'rehearsal r-1: FAILED (20 sample(s), seed 7) — MAINTENANCE of node(s) 1, 2, 3, maxUnavailable 1, restart WAIT_FOR_REATTACH\nerror: interrupted by a restart\n',
    );
  });
});

describe('rollout rehearse and rollout start --rehearsal against a gateway', () => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.stop()));
  });

  function io(json: boolean, tty: boolean) {
    const out: string[] = [];
    const err: string[] = [];
    const drawn: string[] = [];
    const value: CliIo = {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
      isTTY: tty,
      stream: { write: (t: string) => drawn.push(t) } as unknown as NodeJS.WritableStream,
      env: { LOCKKEEPER_POLL_MS: '0' },
      now: () => Date.UTC(2026, 0, 1),
    };
    return { value, out, err, drawn, json };
  }

  it('starts the rehearsal, follows it to its end and prints the report (JSON with --json); start --rehearsal is refused when stale', async () => {
    const worker = workerDouble();
    const t = await rolloutApp(twoZoneCluster(), { rehearsal: { runSamples: worker.runSamples } });
    apps.push(t);
    const client = {
      request: async (document: string, variables: Record<string, unknown>) => {
        const res = await t.gql(document, variables);
        if (res.errors) throw new Error(JSON.stringify(res.errors));
        return res.data;
      },
    } as unknown as GatewayClient;
    const run = async (args: string[], values: Record<string, string>, json = false, tty = false) => {
      const o = io(json, tty);
      return { code: await rolloutVerb.run({ client, io: o.value, args, values, json }), ...o };
    };

    const pending = run(['rehearse', '1', '2'], { samples: '3', seed: '7' });
    await waitFor(() => worker.calls.length === 1);
    worker.calls[0]!.resolve([sample(7, 600_000), sample(8, 720_000), sample(9, 900_000)]);
    const text = await pending;
    expect(text.code).toBe(0);
    const id = (await t.db.prisma.rehearsal.findFirstOrThrow()).id;
    expect(text.out.join('').split('\n').slice(0, 2)).toEqual([
      `rehearsal ${id}: SUCCEEDED (3 sample(s), seed 7) — MAINTENANCE of node(s) 1, 2, maxUnavailable 1, restart WAIT_FOR_REATTACH`,
      "total (p10 / p50 / p90): 10m00s / 12m00s / 15m00s   peak nodes out: 1   samples: 3 succeeded, 0 gave up, 0 failed; 9 duration(s) from the backend's defaults, no history",
    ]);
    // Progress on stderr, one line per change, without a terminal.
    expect(text.err.join('')).toContain(`2026-01-01T00:00:00.000Z rehearsal ${id}: 1/3 sample(s)\n`);
    expect(text.err.join('').endsWith(`2026-01-01T00:00:00.000Z rehearsal ${id}: SUCCEEDED\n`)).toBe(true);

    const again = run(['rehearse', '1', '2'], { samples: '3', seed: '7' }, true);
    await waitFor(() => worker.calls.length === 2);
    worker.calls[1]!.resolve([sample(7, 600_000)]);
    const asJson = await again;
    expect(asJson.err).toEqual([]);
    expect(JSON.parse(asJson.out.join(''))).toMatchObject({ state: 'SUCCEEDED', samples: 3, report: { duration: { p10: 600, p50: 600, p90: 600 } } });

    // On a terminal: one line redrawn in place, blanked to its longest.
    const onTerminal = run(['rehearse', '1', '2'], { samples: '3' }, false, true);
    await waitFor(() => worker.calls.length === 3);
    worker.calls[2]!.resolve([sample(1, 60_000)]);
    const drawn = await onTerminal;
    const third = (await t.db.prisma.rehearsal.findFirstOrThrow({ orderBy: { createdAt: 'desc' } })).id;
    expect(drawn.err).toEqual([]);
    expect(drawn.drawn[0]).toBe(`\rrehearsal ${third}: 1/3 sample(s)`);
    expect(drawn.drawn.slice(-2)).toEqual([`\rrehearsal ${third}: SUCCEEDED    `, '\n']);

    await t.cluster.setVmMaintenanceStrategyLabel('prod/vm-1-0', 'Shutdown');
    const refused = await run(['start', '1', '2'], { rehearsal: id }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CliError);
    expect((refused as CliError).code).toBe('REHEARSAL_STALE');
    expect((refused as CliError).message).toContain('WORKLOAD_CHANGED: 1: VM prod/vm-1-0 has maintenance strategy Shutdown (was Migrate)');
  });
});

/** Waits for a condition the gateway reaches on its own (a definite state, checked after each turn of the event loop). */
async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}
