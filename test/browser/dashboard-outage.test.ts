import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/child-server.ts';
import { startSecuredServer, type SecuredServer } from '../support/secured-server.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH, UI_TIMEOUT_MS } from './graphiql-page.ts';

const haveChromium = existsSync(CHROMIUM_PATH);

/**
 * Issue 27, point 1 (ha:DB5): the dashboard during a database outage. The gateway runs in this
 * process on SQLite, so the test reaches the store's fault injection (Database.faults) directly:
 * no endpoint exposes it. Waits are for elements and texts, never durations.
 */
describe.skipIf(!haveChromium)('the dashboard during a database outage (issue 27, point 1)', () => {
  let s: SecuredServer;
  let browser: Browser;

  beforeAll(async () => {
    const built = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts/build-web.mjs')], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    // A token verified before the outage keeps working from the cache for this long (auth.outageGraceMs).
    s = await startSecuredServer({ dialect: 'sqlite', security: { auth: { outageGraceMs: 3_600_000 } } });
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 240_000 });
  });

  afterAll(async () => {
    s?.t.db.faults?.unavailable(false);
    await browser?.close();
    await s?.stop();
  });

  it('ha:DB5: a banner names the database and keeps the last data while it is down; it goes when the database is back and the live view resumes', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(`${e.name}: ${e.message}`));
    await page.addInitScript((t) => sessionStorage.setItem('lockkeeper.token', t), s.tokens.admin);
    await page.goto(`${s.base}/`, { waitUntil: 'load' });
    const policy = page.locator('tr[data-node="3"] td').nth(2);
    await policy.waitFor();
    await page.locator('.live').waitFor();
    expect(await policy.textContent()).toBe('ACTIVE');
    const rows = await page.locator('tr[data-node]').allTextContents();
    expect(rows).toHaveLength(4);

    s.t.db.faults!.unavailable(true);
    // Nobody touches the page and the subscription stays quiet: the page notices by itself.
    const banner = page.locator('.outage');
    await banner.waitFor();
    const said = await banner.textContent();
    expect(said).toMatch(/^Database unavailable: .+ — showing the last data from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; retrying$/);
    expect(said).toContain(`Database unavailable: ${s.t.db.file} — `);
    expect(await banner.getAttribute('role')).toBe('alert');
    // The last data stays on screen.
    expect(await policy.textContent()).toBe('ACTIVE');
    expect(await page.locator('tr[data-node]').allTextContents()).toEqual(rows);

    s.t.db.faults!.unavailable(false);
    await banner.waitFor({ state: 'detached' });
    // The live view resumes: a change made now reaches the page through the event log.
    const changed = await s.gql('mutation { configureNode(nodeId: "3", policy: PAUSE) { __typename } }', { token: s.tokens.admin });
    expect(changed.body.errors).toBeUndefined();
    await page.locator('tr[data-node="3"] td', { hasText: /^PAUSE$/ }).waitFor();
    expect(await policy.textContent()).toBe('PAUSE');
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
