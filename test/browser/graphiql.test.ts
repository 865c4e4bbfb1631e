import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type WebSocket as PageWebSocket } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH, GraphiQLPage, isLocalUrl, UI_TIMEOUT_MS } from './graphiql-page.ts';
import { untilSubscribed } from '../support/subscribers.ts';

const haveChromium = existsSync(CHROMIUM_PATH);

/** The graphql-ws message type of a WebSocket frame. */
function messageType(payload: string | Buffer): string {
  try {
    return String(JSON.parse(payload.toString()).type);
  } catch {
    return '(not graphql-ws)';
  }
}

/** Resolves once a frame of that graphql-ws type went that way (already, or later). */
async function waitForMessage(ws: PageWebSocket, event: 'framesent' | 'framereceived', seen: string[], type: string): Promise<void> {
  if (seen.includes(type)) return;
  const options = { predicate: (f: { payload: string | Buffer }) => messageType(f.payload) === type, timeout: UI_TIMEOUT_MS };
  await (event === 'framesent' ? ws.waitForEvent('framesent', options) : ws.waitForEvent('framereceived', options));
}

describe('GraphiQL in a real browser', () => {
  let dir: string;
  let started: Started;
  let browser: Browser;

  beforeAll(async () => {
    if (!haveChromium) return;
    dir = mkdtempSync(join(tmpdir(), 'lockkeeper-browser-'));
    // No LOCKKEEPER_CONFIG and an empty cwd: the built-in simulated demo cluster.
    started = await startLockkeeper({
      log: createLogger('silent'),
      env: { LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lk.db')}` },
      cwd: dir,
      port: 0,
    });
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 240_000 });
  });

  afterAll(async () => {
    await browser?.close();
    await started?.app.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function gql(query: string): Promise<any> {
    const res = await fetch(started.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    const body = await res.json();
    expect(body.errors).toBeUndefined();
    return body.data;
  }

  it.skipIf(!haveChromium)(
    `runs a query typed into GraphiQL, with every request staying on this machine (needs ${CHROMIUM_PATH}; apt-get install chromium)`,
    async () => {
      const { graphiql, network } = await GraphiQLPage.open(browser, started.url);
      try {
        await expect(graphiql.page.title()).resolves.toBe('Lockkeeper');

        await graphiql.setOperation('{ nodes { totalCount edges { node { name } } } }');
        await graphiql.run();
        const result = await graphiql.waitForResult('"totalCount": 4');
        expect(result).toContain('"nodes"');
        expect(result).not.toContain('"errors"');

        await graphiql.page.screenshot({ path: join(dir, 'graphiql.png') });

        // The page itself, its schema introspection and the query: all from our server.
        expect(network.requests.length).toBeGreaterThan(0);
        expect(network.requests.filter((u) => u.startsWith(started.url))).not.toHaveLength(0);
        expect(network.requests.filter((u) => !isLocalUrl(u))).toEqual([]);
        expect(network.webSockets.map((ws) => ws.url()).filter((u) => !isLocalUrl(u))).toEqual([]);
      } finally {
        await graphiql.page.close();
      }
    },
  );

  it.skipIf(!haveChromium)(`shows subscription events that arrive over WebSocket (needs ${CHROMIUM_PATH})`, async () => {
    const { graphiql, network } = await GraphiQLPage.open(browser, started.url);
    try {
      // Record graphql-ws messages both ways from the moment the socket opens.
      const received: string[] = [];
      const sent: string[] = [];
      const socket = new Promise<PageWebSocket>((resolve) => {
        graphiql.page.on('websocket', (ws) => {
          ws.on('framereceived', (f) => received.push(messageType(f.payload)));
          ws.on('framesent', (f) => sent.push(messageType(f.payload)));
          resolve(ws);
        });
      });

      await graphiql.setOperation('subscription { nodeChanged(nodeId: "2") { id availability } }');
      await graphiql.run();
      const ws = await socket;
      expect(ws.url()).toBe(started.url.replace(/^http:/, 'ws:'));
      await waitForMessage(ws, 'framereceived', received, 'connection_ack');
      await waitForMessage(ws, 'framesent', sent, 'subscribe');

      // The server registers the subscription after the subscribe message: its listener on the bus marks that moment.
      await untilSubscribed(started.app.bus, 'nodeChanged');
      const mutation = 'mutation { simulation { setNodeOnline(nodeId: "2", online: false) { __typename } } }';
      expect((await gql(mutation)).simulation.setNodeOnline.__typename).toBe('ClusterNode');
      await waitForMessage(ws, 'framereceived', received, 'next');

      const result = await graphiql.waitForResult('"nodeChanged"', '"id": "2"', '"availability": "OFFLINE"');
      expect(result).not.toContain('"errors"');
      expect(network.requests.filter((u) => !isLocalUrl(u))).toEqual([]);

      await graphiql.page.screenshot({ path: join(dir, 'graphiql-subscription.png') });
    } finally {
      await graphiql.page.close();
      // Leave the demo cluster as it was (without masking a failure above).
      await fetch(started.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'mutation { simulation { setNodeOnline(nodeId: "2", online: true) { __typename } } }' }),
      }).catch(() => {});
    }
  });
});
