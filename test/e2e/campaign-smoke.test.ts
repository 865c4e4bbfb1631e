/**
 * Issue 16 points 1–2: the campaigns are tools (`npm run campaign -- crash|faults`), not part
 * of `npm test`; this runs a tiny one of each so their code cannot rot: two crash rounds (two
 * kill -9 and restarts) on each backend (the durable simulated cluster; the pageserver plugin on
 * the pageserver simulators) and two fault rounds on each, every invariant checked after each round.
 */
import { describe, expect, it } from 'vitest';
import { runCampaign } from '../../campaign/campaign.ts';

/** Each round is a maintenance or a drain and fill on a real gateway process; only catches a hang. */
const TIMEOUT = 400_000;

describe('campaigns, in miniature', () => {
  it(
    'crash: two rounds, two kills, every round clean',
    async () => {
      const lines: string[] = [];
      const r = await runCampaign({ mode: 'crash', seed: 7, rounds: 2, maxKillDelayMs: 3000, log: (l) => lines.push(l) });
      expect(r.violations, lines.join('\n')).toEqual([]);
      expect(r).toMatchObject({ rounds: 2, kills: 2, clean: 2 });
      expect(r.operations).toBeGreaterThanOrEqual(2);
    },
    TIMEOUT,
  );

  it(
    'crash on the pageserver backend: two rounds of drain, pageserver restart and fill, two kills; one AttachedSingle per shard, no generation issued twice',
    async () => {
      const lines: string[] = [];
      const r = await runCampaign({ mode: 'crash', backend: 'pageserver', seed: 3, rounds: 2, maxKillDelayMs: 3000, log: (l) => lines.push(l) });
      expect(r.violations, lines.join('\n')).toEqual([]);
      expect(r).toMatchObject({ rounds: 2, kills: 2, clean: 2 });
      expect(r.operations).toBeGreaterThanOrEqual(4);
    },
    TIMEOUT,
  );

  it(
    'faults: two rounds with 10 % transient failures and latency spikes; every operation ends with every failure named',
    async () => {
      const lines: string[] = [];
      const r = await runCampaign({ mode: 'faults', seed: 7, rounds: 2, maxKillDelayMs: 0, log: (l) => lines.push(l) });
      expect(r.violations, lines.join('\n')).toEqual([]);
      expect(r.kills).toBe(0);
      expect(r.operationsNamed).toBe(r.operations);
    },
    TIMEOUT,
  );

  it(
    'faults on the pageserver backend: two rounds, the simulators and the hook injecting 503s and latency spikes; faults were injected, every operation ends with every failure named',
    async () => {
      const lines: string[] = [];
      const r = await runCampaign({ mode: 'faults', backend: 'pageserver', seed: 7, rounds: 2, maxKillDelayMs: 0, log: (l) => lines.push(l) });
      expect(r.violations, lines.join('\n')).toEqual([]);
      expect(r.kills).toBe(0);
      expect(r.faultsInjected!.failures).toBeGreaterThan(0);
      expect(r.operations).toBeGreaterThanOrEqual(4);
      expect(r.operationsNamed).toBe(r.operations);
    },
    TIMEOUT,
  );
});
