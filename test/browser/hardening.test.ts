import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { PROJECT_ROOT } from '../support/child-server.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH, GraphiQLPage, UI_TIMEOUT_MS } from './graphiql-page.ts';

const haveChromium = existsSync(CHROMIUM_PATH);

/** Records, in the page, every Content-Security-Policy violation it reports. */
function recordViolations(): void {
  const seen: string[] = [];
  (window as unknown as { violations: string[] }).violations = seen;
  document.addEventListener('securitypolicyviolation', (e) => seen.push(`${e.effectiveDirective} ${e.blockedURI}`));
}

async function violations(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { violations: string[] }).violations);
}

describe.skipIf(!haveChromium)('the dashboard and GraphiQL no other page can frame (issue 31, point 6)', () => {
  let dir: string;
  let started: Started;
  let browser: Browser;
  let other: Server;
  let otherUrl: string;
  const base = () => started.url.replace('/graphql', '');

  beforeAll(async () => {
    const built = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts/build-web.mjs')], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    dir = mkdtempSync(join(tmpdir(), 'lk-hardening-'));
    started = await startLockkeeper({ log: createLogger('silent'), env: {}, cwd: dir, port: 0 });
    // A page of another origin (another port) that frames the dashboard and GraphiQL.
    other = createServer((req, res) => {
      const target = req.url === '/graphiql' ? `${base()}/graphql` : `${base()}/`;
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><p>a tricky page</p><iframe name="victim" src="${target}" width="1200" height="800"></iframe>`);
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 240_000 });
  });

  afterAll(async () => {
    await browser?.close();
    other?.close();
    await started?.app.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('sends a CSP with frame-ancestors none, X-Frame-Options DENY and Referrer-Policy no-referrer on / and on GraphiQL', async () => {
    for (const url of [`${base()}/`, `${base()}/graphql`]) {
      const res = await fetch(url, { headers: { accept: 'text/html' } });
      await res.text();
      expect(res.headers.get('content-type'), url).toMatch(/^text\/html/);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp, url).toContain("default-src 'self'");
      expect(csp, url).toContain("frame-ancestors 'none'");
      expect(csp, url).not.toMatch(/script-src[^;]*'unsafe-inline'/);
      expect(res.headers.get('x-frame-options'), url).toBe('DENY');
      expect(res.headers.get('referrer-policy'), url).toBe('no-referrer');
    }
  });

  for (const [what, path] of [
    ['the dashboard', '/'],
    ['GraphiQL', '/graphiql'],
  ] as const) {
    it(`a page of another origin cannot frame ${what}: the frame is refused and shows nothing of ours`, async () => {
      const page = await browser.newPage();
      page.setDefaultTimeout(UI_TIMEOUT_MS);
      const target = path === '/' ? `${base()}/` : `${base()}/graphql`;
      const refused = page.waitForEvent('requestfailed', { predicate: (r) => r.url() === target });
      const said = page.waitForEvent('console', { predicate: (m) => m.text().includes('frame-ancestors') });
      await page.goto(`${otherUrl}${path}`, { waitUntil: 'load' });
      expect((await refused).failure()?.errorText).toBe('net::ERR_BLOCKED_BY_RESPONSE');
      expect((await said).text()).toContain(`Framing '${base()}/' violates the following Content Security Policy directive: "frame-ancestors 'none'"`);
      // Chromium puts its error page in the frame's place: nothing of ours.
      const frame = page.frame({ name: 'victim' })!;
      expect(frame.url()).toMatch(/^chrome-error:/);
      expect(await frame.evaluate(() => document.querySelector('#app, #root') === null)).toBe(true);
      await page.close();
    });
  }

  it('the dashboard works under the policy: nodes shown, live, no violation and no page error', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    await page.addInitScript(recordViolations);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.goto(`${base()}/`, { waitUntil: 'load' });
    await page.locator('tr[data-node="4"]').waitFor();
    await page.locator('.live').waitFor();
    // A progress bar's width is set by script: allowed (CSSOM, not an inline style attribute).
    expect(await violations(page)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('GraphiQL works under the policy: a query typed and run answers, no violation', async () => {
    const { graphiql } = await GraphiQLPage.open(browser, `${base()}/graphql`, recordViolations);
    await graphiql.setOperation('{ nodes { totalCount } }');
    await graphiql.run();
    await graphiql.waitForResult('"totalCount": 4');
    expect(await violations(graphiql.page)).toEqual([]);
    await graphiql.page.close();
    // GraphiQL's page is 9 MB: on a loaded two-core machine it can take longer than the default 30 s (a hang catcher).
  }, 120_000);
});
