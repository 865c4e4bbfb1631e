import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/child-server.ts';
import { startSecuredServer, type SecuredServer } from '../support/secured-server.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH, UI_TIMEOUT_MS } from './graphiql-page.ts';

const haveChromium = existsSync(CHROMIUM_PATH);

/**
 * Issue 31, points 3 and 4: the dashboard with authentication on, over the simulated cluster
 * on a virtual clock (a drain started here stays RUNNING: its moves wait for time that never
 * passes), and a wall clock the test moves to expire a token.
 */
describe.skipIf(!haveChromium)('the dashboard and its token (issue 31, points 3 and 4)', () => {
  let s: SecuredServer;
  let browser: Browser;
  let now = Date.UTC(2026, 0, 15, 9, 0, 0);
  const pageErrors: string[] = [];

  beforeAll(async () => {
    const built = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts/build-web.mjs')], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    s = await startSecuredServer({ security: { now: () => now } });
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 240_000 });
  });

  afterAll(async () => {
    await browser?.close();
    await s?.stop();
  });

  async function open(): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    page.on('pageerror', (e) => pageErrors.push(`${e.name}: ${e.message}`));
    await page.goto(`${s.base}/`, { waitUntil: 'load' });
    return page;
  }

  /** Pastes the token into the prompt; resolves once the prompt has answered (refused) or gone (accepted). */
  async function useToken(page: Page, value: string): Promise<void> {
    const form = page.locator('form.token');
    await form.locator('input[name="token"]').fill(value);
    await form.getByRole('button', { name: 'Use token' }).click();
  }

  async function admin(query: string) {
    const res = await s.gql(query, { token: s.tokens.admin });
    expect(res.body.errors).toBeUndefined();
    return res.body.data;
  }

  it('a wrong token: the prompt stays, with a message saying the token is not valid', async () => {
    const page = await open();
    await expect(page.locator('form.token .prompt').textContent()).resolves.toBe('Authentication is on: paste an API token.');
    await useToken(page, 'lk_not-a-token-of-ours');
    const said = page.locator('form.token .prompt.error');
    await said.waitFor();
    expect(await said.textContent()).toBe('This token is not valid, wrong or mistyped (invalid token): paste another.');
    expect(await page.locator('form.token input[name="token"]').inputValue()).toBe('lk_not-a-token-of-ours');
    expect(await page.evaluate(() => sessionStorage.getItem('lockkeeper.token'))).toBeNull();
    await page.close();
  });

  it('a revoked token and an expired one: each said as such', async () => {
    const made = await s.t.app.auth.createToken({ name: 'night-shift', scope: 'viewer', expiresIn: '1h', createdBy: 'test' });
    const gone = await s.t.app.auth.createToken({ name: 'leaked', scope: 'viewer', createdBy: 'test' });
    await admin('mutation { revokeToken(token: "leaked") { ... on ApiToken { revoked } } }');
    now += 3_600_001;

    const page = await open();
    await useToken(page, gone.token);
    await page.locator('form.token .prompt.error').getByText('This token has been revoked (token "leaked" has been revoked): paste another.').waitFor();
    await useToken(page, made.token);
    await page
      .locator('form.token .prompt.error')
      .getByText(/^This token has expired \(token "night-shift" expired at .+\): paste another\.$/)
      .waitFor();
    await page.close();
  });

  it('a viewer is offered no action; an operator is offered none that the node’s state forbids (no Drain while a drain runs)', async () => {
    const viewer = await open();
    await useToken(viewer, s.tokens.viewer);
    await viewer.locator('tr[data-node="1"]').waitFor();
    await viewer.locator('.live').waitFor();
    expect(await viewer.locator('td.actions, .rollout-form').count()).toBe(0);
    expect(await viewer.locator('main button').allTextContents()).toEqual(['Forget token', '← Newer', 'Older →']);
    await viewer.close();

    const drain = await s.gql('mutation { r: startNodeDrain(nodeId: "1", reason: "disk swap") { ... on Operation { id state } } }', {
      token: s.tokens.operator,
    });
    expect(drain.body.data.r.state).toBe('RUNNING');
    const page = await open();
    await useToken(page, s.tokens.operator);
    await page.locator(`tr[data-operation="${drain.body.data.r.id}"]`).waitFor();
    const buttons = async (id: string) => (await page.locator(`tr[data-node="${id}"] td.actions button`).allTextContents()).map((t) => t.trim());
    expect(await buttons('1')).toEqual(['Cancel…']);
    expect(await buttons('2')).toEqual(['Maintenance…', 'Drain…', 'Fill…']);
    await page.close();
  });

  it('a token revoked during a session ends the live view with the message, and no page error was raised', async () => {
    const session = await s.t.app.auth.createToken({ name: 'desk-2', scope: 'viewer', createdBy: 'test' });
    const page = await open();
    await useToken(page, session.token);
    await page.locator('.live').waitFor();
    await admin('mutation { revokeToken(token: "desk-2") { ... on ApiToken { revoked } } }');
    await page
      .locator('form.token .prompt.error')
      .getByText(/^This token has been revoked \(.*desk-2.*revoked\): paste another\.$/)
      .waitFor();
    expect(await page.locator('tr[data-node]').count()).toBe(0);
    await page.close();
    expect(pageErrors).toEqual([]);
  });
});
