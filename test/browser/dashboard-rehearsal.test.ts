import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twoZoneCluster } from '../rollouts/harness.ts';
import { PROJECT_ROOT } from '../support/child-server.ts';
import { startSecuredServer, type SecuredServer } from '../support/secured-server.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH, UI_TIMEOUT_MS } from './graphiql-page.ts';

const haveChromium = existsSync(CHROMIUM_PATH);

/** Where the simulated cluster's virtual clock starts (it never moves here: the rollout started stays in its first wave). */
const VIRTUAL_START = Date.UTC(2026, 0, 1);

/**
 * Issue 33, points 2 and 3: the dashboard's "Rehearse" action over the real gateway and the
 * rehearsal worker (the fake backend loaded into the simulated cluster), its report drawn on a
 * time axis, and a rollout started from it shown against its prediction while it runs.
 */
describe.skipIf(!haveChromium)('rehearsals in the dashboard (issue 33, points 2 and 3)', () => {
  let s: SecuredServer;
  let browser: Browser;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    const built = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts/build-web.mjs')], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    s = await startSecuredServer({
      topology: twoZoneCluster(),
      latenciesMs: { migrate: 200, stop: 100, start: 100, cordon: 10, cutOver: 20 },
      restartDelayMs: 2_000,
      heartbeatIntervalMs: 500,
      plugins: [{ name: 'fake', options: {} }],
    });
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 240_000 });
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await s?.stop();
  });

  /** The dashboard with a token pasted in, its page clock fixed at `clockAt`, once the nodes show. */
  async function open(tokenValue: string, clockAt = VIRTUAL_START): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    page.on('pageerror', (e) => pageErrors.push(`${e.name}: ${e.message}`));
    // The bars are placed by style: under the dashboard's CSP (test/browser/hardening.test.ts) nothing may be refused.
    page.on('console', (m) => m.type() === 'error' && /Content Security Policy/.test(m.text()) && pageErrors.push(m.text()));
    await page.clock.setFixedTime(clockAt);
    await page.goto(`${s.base}/`, { waitUntil: 'load' });
    await page.locator('form.token input[name="token"]').fill(tokenValue);
    await page.locator('form.token').getByRole('button', { name: 'Use token' }).click();
    await page.locator('tr[data-node="1"]').waitFor();
    return page;
  }

  it('the Rehearse action is offered to an operator, not to a viewer', async () => {
    const viewer = await open(s.tokens.viewer);
    expect(await viewer.locator('.caller').getAttribute('data-scope')).toBe('VIEWER');
    expect(await viewer.getByRole('button', { name: 'Rehearse' }).count()).toBe(0);
    await viewer.close();

    const operator = await open(s.tokens.operator);
    await operator.locator('.rollout-form summary').click();
    await operator.getByRole('button', { name: 'Rehearse' }).waitFor({ state: 'visible' });
    await operator.close();
  });

  it('a rehearsal drawn with one bar per wave, in order; the rollout started from it shows predicted against actual', { timeout: 300_000 }, async () => {
    const page = await open(s.tokens.operator, VIRTUAL_START + 5 * 60_000);
    const form = page.locator('.rollout-form');
    await form.locator('summary').click();
    const ticks = form.locator('.row').first().locator('input[type="checkbox"]');
    await ticks.nth(0).check();
    await ticks.nth(2).check();
    await form.locator('select').nth(1).selectOption('NONE');
    await form.locator('input[name="samples"]').fill('3');
    await form.getByRole('button', { name: 'Rehearse' }).click();

    const report = form.locator('.rehearsal-report');
    await report.waitFor({ timeout: 240_000 });
    const id = await report.getAttribute('data-rehearsal');
    const read = await s.gql(
      `query ($id: ID!) { r: rehearsal(id: $id) { ... on Rehearsal { state samples input report { waves { wave nodeIds } peakNodesOut } } } }`,
      { token: s.tokens.viewer, variables: { id } },
    );
    expect(read.body.data.r).toMatchObject({
      state: 'SUCCEEDED',
      samples: 3,
      input: { nodes: ['1', '3'], action: 'MAINTENANCE', restart: 'NONE' },
      report: {
        waves: [
          { wave: 1, nodeIds: ['1'] },
          { wave: 2, nodeIds: ['3'] },
        ],
        peakNodesOut: 1,
      },
    });

    // One bar per wave, in wave order, each starting later than the one before.
    const waves = report.locator('.timeline .wave');
    expect(await waves.evaluateAll((ws) => ws.map((w) => w.getAttribute('data-wave')))).toEqual(['1', '2']);
    expect(await report.locator('.timeline .wave-nodes').allTextContents()).toEqual(['1', '3']);
    expect(await report.locator('.timeline .bar').count()).toBe(2);
    const bars = await report.locator('.timeline .bar').evaluateAll((bs) => bs.map((b) => b.getBoundingClientRect()).map((r) => ({ x: r.x, width: r.width })));
    const tracks = await report.locator('.timeline .track').evaluateAll((ts) => ts.map((t) => t.getBoundingClientRect().x));
    expect(bars[0]!.x).toBe(tracks[0]);
    expect(bars[1]!.x).toBeGreaterThan(bars[0]!.x);
    expect(bars[0]!.width).toBeGreaterThan(2);
    expect(await report.locator('.timeline .whisker').count()).toBe(2);
    expect(await report.locator('.totals').textContent()).toMatch(
      /^\s*total \(p10 \/ p50 \/ p90\): \S+ \/ \S+ \/ \S+ · peak nodes out: 1 ·\s+samples: 3 succeeded, 0 gave up, 0 failed/,
    );
    expect(await report.locator('.left-stopped').textContent()).toMatch(/^\s*VMs left stopped:/);

    // Started from the rehearsal: confirmed with a reason, then shown against it while it runs.
    await form.getByRole('button', { name: 'Start this rollout…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.locator('input[name="reason"]').fill('patch night');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    const vs = page.locator('table.vs');
    await vs.waitFor();
    const rollout = await s.gql(`{ operations(kind: ROLLOUT, first: 1) { edges { node { id state rehearsal { id } } } } }`, { token: s.tokens.viewer });
    const op = rollout.body.data.operations.edges[0].node;
    expect(op).toMatchObject({ state: 'RUNNING', rehearsal: { id } });
    expect(await vs.getAttribute('data-vs')).toBe(op.id);
    expect(await vs.locator('tr[data-wave]').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-wave')))).toEqual(['1', '2']);
    const row = (wave: number) => vs.locator(`tr[data-wave="${wave}"]`);
    expect(await row(1).locator('.predicted-start').textContent()).toBe('0s');
    expect(await row(1).locator('.predicted').textContent()).toMatch(/^\S+ \/ \S+ \/ \S+$/);
    // The virtual clock stands at VIRTUAL_START; the page's clock five minutes later.
    expect(await row(1).locator('.actual-start').textContent()).toBe('0s');
    expect(await row(1).locator('.actual').textContent()).toBe('5m00s so far');
    // The fake cluster's predicted waves take well under a second: five minutes is past p90 already.
    expect(await row(1).locator('.verdict').textContent()).toBe('over p90');
    expect(await row(2).locator('.actual').textContent()).toBe('not started');
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
