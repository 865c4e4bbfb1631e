import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import type { Scope } from '../../src/auth/scopes.ts';
import { createTestApp, type TestApp, type TestAppOptions } from './graphql-app.ts';

type TokenSet = Record<Scope, string>;

export interface SecuredServer {
  t: TestApp;
  /** http://127.0.0.1:port */
  base: string;
  url: string;
  wsUrl: string;
  /** One token per scope, named `test-viewer`, `test-operator`, `test-admin`. */
  tokens: TokenSet;
  /** POST /graphql over the socket with an optional bearer token. */
  gql<T = any>(
    query: string,
    options?: { token?: string | null; variables?: Record<string, unknown> },
  ): Promise<{ status: number; body: { data?: T; errors?: GqlError[] } }>;
  /** A graphql-ws client whose connection_init carries the token (none when null). */
  ws(token: string | null, extra?: { onClosed?: (event: { code: number; reason: string }) => void }): Client;
  stop(): Promise<void>;
}

interface GqlError {
  message: string;
  extensions?: Record<string, any>;
}

/**
 * A listening server (loopback, port 0) over the simulated cluster with authentication on:
 * a viewer, an operator and an admin token exist. Every client made here is disposed by stop().
 */
export async function startSecuredServer(options: TestAppOptions = {}): Promise<SecuredServer> {
  const t = await createTestApp(options);
  const tokens = {} as TokenSet;
  for (const scope of ['viewer', 'operator', 'admin'] as const) {
    tokens[scope] = (await t.app.auth.createToken({ name: `test-${scope}`, scope, createdBy: 'test' })).token;
  }
  const bound = await t.app.start(0, '127.0.0.1');
  const base = `http://127.0.0.1:${bound.port}`;
  const clients: Client[] = [];
  return {
    t,
    base,
    url: `${base}/graphql`,
    wsUrl: `ws://127.0.0.1:${bound.port}/graphql`,
    tokens,
    async gql(query, { token = null, variables } = {}) {
      const res = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, body: (await res.json()) as any };
    },
    ws(token, extra = {}) {
      const client = createClient({
        url: `ws://127.0.0.1:${bound.port}/graphql`,
        webSocketImpl: WebSocket,
        retryAttempts: 0,
        lazy: true,
        connectionParams: token ? { authorization: `Bearer ${token}` } : {},
        on: { closed: (event) => extra.onClosed?.(event as { code: number; reason: string }) },
      });
      clients.push(client);
      return client;
    },
    async stop() {
      await Promise.all(clients.map((c) => c.dispose()));
      await t.stop();
    },
  };
}

/**
 * The first message, error or completion of a subscription, or `listening` once `listening()`
 * holds (e.g. the bus counts one more subscriber: the server accepted it and waits for events).
 * `silent` only when nothing of that came within `limitMs`, which catches a hang, never
 * decides a pass: no outcome is inferred from the time it took.
 */
export function firstOutcome(
  client: Client,
  query: string,
  listening: () => boolean = () => false,
  limitMs = 60_000,
): Promise<{ kind: 'next'; data: any } | { kind: 'error'; error: any } | { kind: 'complete' } | { kind: 'listening' } | { kind: 'silent' }> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (v: Parameters<typeof resolve>[0]) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(probe);
      stop();
      resolve(v);
    };
    const timer = setTimeout(() => settle({ kind: 'silent' }), limitMs);
    const probe = setInterval(() => listening() && settle({ kind: 'listening' }), 5);
    const stop = client.subscribe(
      { query },
      { next: (msg) => settle({ kind: 'next', data: msg }), error: (error) => settle({ kind: 'error', error }), complete: () => settle({ kind: 'complete' }) },
    );
  });
}
