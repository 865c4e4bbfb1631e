/**
 * A picture of the live dashboard during a rollout, for a look: a gateway over the
 * simulated demo cluster, a MAINTENANCE rollout of all four nodes, and Debian's Chromium at
 * 1280 px once the first wave is under way. Its times and ids differ at each run: the
 * picture in docs/operations.md (docs/dashboard.png) comes from test/browser/dashboard-screens.test.ts instead (a
 * fixed fixture, compared with references).
 *
 *   npm run build && npx tsx scripts/dashboard-screenshot.ts [out.png]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { createLogger } from '../src/logger.ts';
import { startLockkeeper } from '../src/start.ts';

const out = process.argv[2] ?? 'dashboard-live.png';
const dir = mkdtempSync(join(tmpdir(), 'lk-screenshot-'));
// The demo cluster, slowed down so that the picture catches a wave in flight.
writeFileSync(
  join(dir, 'lockkeeper.config.json'),
  JSON.stringify({ plugins: [{ name: 'fake', options: { latenciesMs: { migrate: 4000, stop: 1500, cutOver: 800 } } }] }),
);
const started = await startLockkeeper({ log: createLogger('silent'), env: {}, cwd: dir, port: 0 });
const post = async (query: string) =>
  (
    (await (await fetch(started.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })).json()) as {
      data: Record<string, { __typename: string }>;
    }
  ).data;
try {
  const start = await post(
    'mutation { startRollout(input: { nodes: ["1", "2", "3", "4"], action: MAINTENANCE, restart: NONE, force: true, order: ZONE_BY_ZONE, reason: "firmware 2.4" }) { __typename ... on Operation { id } } }',
  );
  if (start.startRollout!.__typename !== 'Operation') throw new Error(JSON.stringify(start));
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 820 } });
  await page.goto(started.url.replace('/graphql', '/'), { waitUntil: 'load' });
  await page.locator('tr[data-kind="ROLLOUT"] .waiting').filter({ hasText: 'maintenance' }).waitFor({ timeout: 30_000 });
  await page.locator('tr[data-kind="MAINTENANCE"]').first().waitFor();
  await page.waitForTimeout(1500);
  await page.screenshot({ path: out, fullPage: true });
  await browser.close();
  process.stdout.write(`wrote ${out}\n`);
} finally {
  await started.app.stop();
  rmSync(dir, { recursive: true, force: true });
}
