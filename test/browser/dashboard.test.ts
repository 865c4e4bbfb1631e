import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { PROJECT_ROOT } from '../support/child-server.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH, isLocalUrl, recordNetwork, UI_TIMEOUT_MS, type NetworkLog } from './graphiql-page.ts';

const haveChromium = existsSync(CHROMIUM_PATH);

describe.skipIf(!haveChromium)('the dashboard in Debian’s Chromium (rollout:W1–W3)', () => {
  let dir: string;
  let started: Started;
  let browser: Browser;
  let page: Page;
  let network: NetworkLog;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    // The assets `npm run build` makes (npm install runs it too).
    const built = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts/build-web.mjs')], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    dir = mkdtempSync(join(tmpdir(), 'lk-dashboard-'));
    const nodes = ['1', '2', '3'].map((id) => ({ id, zone: id === '3' ? 'zone-b' : 'zone-a', roles: ['worker', 'storage'] }));
    const shards = Array.from({ length: 9 }, (_, i) => ({
      tenantId: `t${i}`,
      attachedNodeId: String((i % 3) + 1),
      secondaries: [{ nodeId: String(((i + 1) % 3) + 1) }],
    }));
    writeFileSync(
      join(dir, 'lockkeeper.config.json'),
      JSON.stringify({
        plugins: [{ name: 'fake', options: { topology: { nodes, shards }, latenciesMs: { cutOver: 700 } } }],
        operations: { maxConcurrentMoves: 1 },
      }),
    );
    started = await startLockkeeper({ log: createLogger('silent'), env: {}, cwd: dir, port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 240_000 });
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    network = recordNetwork(page);
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(started.url.replace('/graphql', '/'), { waitUntil: 'load' });
  });

  afterAll(async () => {
    await browser?.close();
    await started?.app.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('rollout:W1 shows nodes by zone with availability, policy and phase, live, with a link to GraphiQL', async () => {
    await page.locator('tr[data-node="2"]').waitFor();
    expect(await page.locator('section.zone h3').allTextContents()).toEqual(['zone-a', 'zone-b']);
    expect(await page.locator('tr[data-node="2"] td').nth(1).textContent()).toBe('ACTIVE');
    expect(await page.locator('tr[data-node="2"] td').nth(2).textContent()).toBe('ACTIVE');
    // Three shards are attached to it: not safe to restart, and the cell says how many remain.
    expect(await page.locator('tr[data-node="2"] td[data-safe]').getAttribute('data-safe')).toBe('false');
    expect((await page.locator('tr[data-node="2"] td[data-safe]').textContent())?.trim()).toBe('no: 3 remain');
    await page.locator('.live').waitFor();
    expect(await page.locator('a[href="/graphql"]').count()).toBe(1);
  });

  it('rollout:W2 rollout:W3 a drain previewed, confirmed with a reason, then followed live to its end; a refusal shows its typed message', async () => {
    const row = page.locator('tr[data-node="2"]');
    await row.getByRole('button', { name: 'Drain…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Drain node-2' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('drain: 3 cut-over(s), 0 skipped');
    await dialog.locator('input[name="reason"]').fill('browser test');
    // Every progress the page shows from now on, as it redraws (no reload, no polling by the test).
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { seen: string[] }).seen = seen;
      new MutationObserver(() => {
        const text = document.querySelector('tr[data-kind="DRAIN"] .progress span')?.textContent;
        const state = document.querySelector('tr[data-kind="DRAIN"]')?.getAttribute('data-state');
        if (text && seen.at(-1) !== `${state} ${text}`) seen.push(`${state} ${text}`);
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await page.locator('.message.ok').waitFor();
    await page.locator('tr[data-kind="DRAIN"][data-state="SUCCEEDED"]').waitFor({ timeout: 240_000 });
    const seen = await page.evaluate(() => (window as unknown as { seen: string[] }).seen);
    expect(seen[0]).toMatch(/^RUNNING [0-2]\/3$/);
    expect(
      seen.some((s) => /^RUNNING [12]\/3$/.test(s)),
      seen.join(', '),
    ).toBe(true);
    expect(seen.at(-1)).toBe('SUCCEEDED 3/3');
    expect(await row.locator('td').nth(2).textContent()).toBe('PAUSE_FOR_RESTART');
    // Every shard moved: now it may be restarted.
    await row.locator('td[data-safe="true"]').waitFor();
    const steps = (await (
      await fetch(started.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ auditLog(first: 5) { edges { node { action reason } } } }' }),
      })
    ).json()) as any;
    expect(steps.data.auditLog.edges[0].node).toEqual({ action: 'startNodeDrain', reason: 'browser test' });

    // A refusal: node 2 is paused for restart now.
    await row.getByRole('button', { name: 'Drain…' }).click();
    await page.getByRole('dialog', { name: 'Drain node-2' }).getByRole('button', { name: 'Confirm' }).click();
    const refusal = page.locator('.message.error');
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('PRECONDITION_FAILED: node 2 has scheduling policy PAUSE_FOR_RESTART');
  });

  it('rollout:W3 no request leaves this machine, and the page raised no error', () => {
    expect(pageErrors).toEqual([]);
    expect(network.requests.length).toBeGreaterThan(3);
    expect(network.requests.filter((u) => !isLocalUrl(u))).toEqual([]);
    expect(network.webSockets.map((ws) => ws.url()).filter((u) => !isLocalUrl(u))).toEqual([]);
    expect(network.webSockets.length).toBeGreaterThan(0);
  });
});

describe.skipIf(!haveChromium)('the dashboard with authentication on (rollout:W2)', () => {
  const TOKEN = 'a-bootstrap-token-for-the-dashboard';
  let dir: string;
  let started: Started;
  let browser: Browser;

  beforeAll(async () => {
    const built = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts/build-web.mjs')], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    dir = mkdtempSync(join(tmpdir(), 'lk-dashboard-auth-'));
    started = await startLockkeeper({ log: createLogger('silent'), env: { LOCKKEEPER_ADMIN_TOKEN: TOKEN }, cwd: dir, port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 240_000 });
  });

  afterAll(async () => {
    await browser?.close();
    await started?.app.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('asks for a token, keeps it in the tab’s session storage only, and then shows the cluster live', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    await page.goto(started.url.replace('/graphql', '/'), { waitUntil: 'load' });
    const form = page.locator('form.token');
    await form.waitFor();
    await form.locator('input[name="token"]').fill(TOKEN);
    await form.getByRole('button', { name: 'Use token' }).click();
    await page.locator('tr[data-node="1"]').waitFor();
    await page.locator('.live').waitFor();
    expect(await page.evaluate(() => ({ session: sessionStorage.getItem('lockkeeper.token'), local: localStorage.length, cookies: document.cookie }))).toEqual({
      session: TOKEN,
      local: 0,
      cookies: '',
    });
    // Another tab (a new context) starts without it.
    const other = await browser.newPage();
    await other.goto(started.url.replace('/graphql', '/'), { waitUntil: 'load' });
    await other.locator('form.token').waitFor();
  });
});

describe.skipIf(!haveChromium)('the dashboard when its WebSocket drops (rollout:W1)', () => {
  let dir: string;
  let started: Started;
  let browser: Browser;
  let proxy: Server;
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    const built = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts/build-web.mjs')], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    dir = mkdtempSync(join(tmpdir(), 'lk-dashboard-ws-'));
    started = await startLockkeeper({ log: createLogger('silent'), env: {}, cwd: dir, port: 0 });
    // The page talks to the gateway through this relay, which the test can cut.
    proxy = createServer((client) => {
      const upstream = connect(started.port, '127.0.0.1');
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 240_000 });
  });

  afterAll(async () => {
    await browser?.close();
    for (const s of sockets) s.destroy();
    proxy?.close();
    await started?.app.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reconnects, resumes the event log after the last seq it saw, and shows what happened meanwhile', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    const subscribes: string[] = [];
    page.on('websocket', (ws) => ws.on('framesent', (f) => String(f.payload).includes('"subscribe"') && subscribes.push(String(f.payload))));
    await page.goto(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}/`, { waitUntil: 'load' });
    await page.locator('.live').waitFor();
    const gql = (query: string) => fetch(started.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
    // An event the page sees, so that it has a cursor.
    await gql('mutation { configureNode(nodeId: "4", policy: PAUSE) { __typename } }');
    await page.locator('tr[data-node="4"] td').nth(2).getByText('PAUSE').waitFor();

    for (const s of sockets) s.destroy();
    await page.locator('.offline').waitFor();
    await gql('mutation { configureNode(nodeId: "4", policy: ACTIVE) { __typename } }');
    await page.locator('.live').waitFor();
    await page.locator('tr[data-node="4"] td').nth(2).getByText('ACTIVE', { exact: true }).waitFor();
    const after = subscribes.map((p) => JSON.parse(p).payload.variables?.after ?? null);
    expect(after[0]).toBeNull();
    expect(after.at(-1)).toBeGreaterThan(0);
  });
});

describe.skipIf(!haveChromium)('force from the dashboard (issue 17, point 7; docs/runbook.md §4)', () => {
  let dir: string;
  let started: Started;
  let browser: Browser;
  const gql = async (query: string) =>
    (await (await fetch(started.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })).json()) as any;

  beforeAll(async () => {
    const built = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts/build-web.mjs')], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    dir = mkdtempSync(join(tmpdir(), 'lk-dashboard-force-'));
    const nodes = ['1', '2'].map((id) => ({ id, zone: 'zone-a', roles: ['worker', 'storage'] }));
    // One shard on node 1 and one VM on node 2, whose cut-over and migration the backend will never answer (the simulated cluster's `stuck` fault).
    const shards = [{ tenantId: 'stuck-0', attachedNodeId: '1', secondaries: [{ nodeId: '2' }] }];
    const vms = [{ namespace: 'default', name: 'stuck-vm', nodeId: '2' }];
    writeFileSync(
      join(dir, 'lockkeeper.config.json'),
      JSON.stringify({ plugins: [{ name: 'fake', options: { topology: { nodes, shards, vms }, latenciesMs: { cutOver: 10, migrate: 10 } } }] }),
    );
    started = await startLockkeeper({ log: createLogger('silent'), env: {}, cwd: dir, port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 240_000 });
  });

  afterAll(async () => {
    await browser?.close();
    await started?.app.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The dashboard, opened once the operation's stuck step is in flight (the definite signal: it is MOVING, and stays so). */
  async function dashboardOnceMoving(operationId: string): Promise<Page> {
    for (;;) {
      const moving = (await gql(`{ operation(id: "${operationId}") { ... on Operation { steps(states: [MOVING]) { edges { node { workloadId } } } } } }`)).data
        .operation.steps.edges;
      if (moving.length) break;
    }
    const page = await browser.newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    await page.goto(started.url.replace('/graphql', '/'), { waitUntil: 'load' });
    return page;
  }

  it('a cancel waits in CANCELLING; cancel with force, confirmed after its warning, ends it: the step ABANDONED, re-checked, shown', async () => {
    expect((await gql('mutation { simulation { injectFaults(input: { stuck: ["stuck-0"] }) { ... on SimulationFaults { stuck } } } }')).data).toBeTruthy();
    const op = (await gql('mutation { r: startNodeDrain(nodeId: "1") { ... on Operation { id } } }')).data.r;
    const page = await dashboardOnceMoving(op.id);
    const row = page.locator('tr[data-node="1"]');
    const opRow = page.locator(`tr[data-operation="${op.id}"]`);
    await page.locator(`tr[data-operation="${op.id}"][data-state="RUNNING"]`).waitFor();

    // Without force: the dialog offers it unticked, says nothing alarming, and the cancel waits for the stuck cut-over.
    await row.getByRole('button', { name: 'Cancel…' }).click();
    let dialog = page.getByRole('dialog', { name: 'Cancel the drain of node-1' });
    await dialog.waitFor();
    expect(await dialog.locator('input[name="force"]').isChecked()).toBe(false);
    expect(await dialog.locator('.force-warning').count()).toBe(0);
    await dialog.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.locator(`tr[data-operation="${op.id}"][data-state="CANCELLING"]`).waitFor();

    // With force: ticking it shows what force does, and the button says it.
    await row.getByRole('button', { name: 'Cancel…' }).click();
    dialog = page.getByRole('dialog', { name: 'Cancel the drain of node-1' });
    await dialog.locator('input[name="force"]').check();
    const warning = dialog.locator('.force-warning');
    await warning.waitFor();
    expect(await warning.textContent()).toContain('Each is recorded ABANDONED with its last known state and re-checked against the backend on every read');
    expect(await dialog.getByRole('button', { name: 'Confirm', exact: true }).count()).toBe(0);
    await dialog.locator('input[name="reason"]').fill('cut-over hangs');
    await dialog.getByRole('button', { name: 'Confirm with force' }).click();

    await page.locator(`tr[data-operation="${op.id}"][data-state="CANCELLED"]`).waitFor();
    expect(await opRow.locator('[data-abandoned]').getAttribute('data-abandoned')).toBe('1');
    const step = opRow.locator('ul.abandoned li[data-step="stuck-0"]');
    await step.waitFor();
    const text = (await step.textContent())!;
    expect(text).toMatch(/^\s*shard stuck-0 ABANDONED: /);
    // The re-check, read from the backend at this load: the cut-over never finished, the shard is still on node 1.
    const recheck = (
      await gql(
        `{ operation(id: "${op.id}") { ... on Operation { error steps(states: [ABANDONED]) { edges { node { recheck { settled description } } } } } } }`,
      )
    ).data.operation;
    expect(recheck.error).toBe('FORCED');
    expect(text).toContain(`now: ${recheck.steps.edges[0].node.recheck.description}`);
    expect(await step.getAttribute('data-settled')).toBe(String(recheck.steps.edges[0].node.recheck.settled));
    const audit = (await gql('{ auditLog(first: 2) { edges { node { action reason } } } }')).data.auditLog.edges.map((e: any) => e.node);
    expect(audit).toEqual([
      { action: 'cancelNodeDrain', reason: 'cut-over hangs' },
      { action: 'cancelNodeDrain', reason: null },
    ]);
  });
  it('disable with force, confirmed after its warning, ends a maintenance whose migration never answers: the step ABANDONED, shown', async () => {
    expect(
      (await gql('mutation { simulation { injectFaults(input: { stuck: ["default/stuck-vm"] }) { ... on SimulationFaults { stuck } } } }')).data,
    ).toBeTruthy();
    const op = (await gql('mutation { r: enableMaintenanceMode(nodeId: "2") { ... on Operation { id } } }')).data.r;
    const page = await dashboardOnceMoving(op.id);
    const opRow = page.locator(`tr[data-operation="${op.id}"]`);
    await page.locator(`tr[data-operation="${op.id}"][data-state="RUNNING"]`).waitFor();
    await page.locator('tr[data-node="2"]').getByRole('button', { name: 'Disable…' }).click();
    const dialog = page.getByRole('dialog', { name: 'End maintenance of node-2' });
    await dialog.waitFor();
    expect(await dialog.locator('input[name="force"]').isChecked()).toBe(false);
    await dialog.locator('input[name="force"]').check();
    const warning = dialog.locator('.force-warning');
    await warning.waitFor();
    expect(await warning.textContent()).toContain('recorded ABANDONED with its last known state');
    await dialog.locator('input[name="reason"]').fill('migration hangs');
    await dialog.getByRole('button', { name: 'Confirm with force' }).click();

    await page.locator(`tr[data-operation="${op.id}"][data-state="CANCELLED"]`).waitFor();
    expect(await opRow.locator('[data-abandoned]').getAttribute('data-abandoned')).toBe('1');
    const step = opRow.locator('ul.abandoned li[data-step="default/stuck-vm"]');
    await step.waitFor();
    expect((await step.textContent())!).toMatch(/^\s*vm default\/stuck-vm ABANDONED: /);
    const recorded = (
      await gql(`{ operation(id: "${op.id}") { ... on Operation { state steps(states: [ABANDONED]) { edges { node { workloadId reason } } } } } }`)
    ).data.operation;
    expect(recorded).toEqual({ state: 'CANCELLED', steps: { edges: [{ node: { workloadId: 'default/stuck-vm', reason: 'FORCED' } }] } });
    const [audit] = (await gql('{ auditLog(first: 1) { edges { node { action reason } } } }')).data.auditLog.edges.map((e: any) => e.node);
    expect(audit).toEqual({ action: 'disableMaintenanceMode', reason: 'migration hangs' });
  });
});
