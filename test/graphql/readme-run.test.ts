/**
 * The README's GraphQL examples, run as written, in the order they appear, against a real
 * demo server (issue 17 point 2): no `errors`, and no mutation answers a typed error unless
 * the example says so with a `# expect: <Type>` comment line just above it. A subscription
 * example's `"…"` is the operation the examples started last; it must deliver an event.
 * Between mutations the test waits until nothing runs and every node is ACTIVE (what a
 * reader does before typing the next example).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kind, parse, type OperationDefinitionNode } from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { PROJECT_ROOT, until } from '../support/child-server.ts';

const README = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
const TOKEN = 'readme-run-bootstrap-admin-token-0123456789';

interface Example {
  source: string;
  operation: OperationDefinitionNode;
  /** From a `# expect: <Type>` line just above the operation. */
  expect: string | null;
}

function examples(): Example[] {
  return [...README.matchAll(/```graphql\n([\s\S]*?)```/g)].flatMap((m) => {
    const block = m[1]!;
    return parse(block)
      .definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)
      .map((operation, i, all) => {
        const before = block.slice(i === 0 ? 0 : all[i - 1]!.loc!.end, operation.loc!.start);
        return { source: block.slice(operation.loc!.start, operation.loc!.end), operation, expect: /# expect: (\w+)/.exec(before)?.[1] ?? null };
      });
  });
}

/** Every `__typename` in a result, and the ids of the operations it returned. */
function walk(value: unknown, out: { types: string[]; operations: string[] } = { types: [], operations: [] }) {
  if (Array.isArray(value)) for (const v of value) walk(v, out);
  else if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (typeof o.__typename === 'string') out.types.push(o.__typename);
    if (o.__typename === 'Operation' && typeof o.id === 'string') out.operations.push(o.id);
    for (const v of Object.values(o)) walk(v, out);
  }
  return out;
}

describe('README examples against the demo', () => {
  let dir: string;
  let s: Started;

  async function gql(query: string): Promise<{ data?: any; errors?: unknown[] }> {
    const res = await fetch(s.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ query }),
    });
    return (await res.json()) as { data?: any; errors?: unknown[] };
  }

  /** Nothing runs and every node is back ACTIVE. */
  async function settle(after: string) {
    await until(
      async () => {
        const { data } = await gql('{ operations(states: [RUNNING, CANCELLING, PAUSED]) { totalCount } nodes { edges { node { availability } } } }');
        return data.operations.totalCount === 0 && data.nodes.edges.every((e: any) => e.node.availability === 'ACTIVE') ? true : undefined;
      },
      `the cluster to settle after: ${after.slice(0, 80)}`,
      120_000,
      50,
    );
  }

  async function firstEvent(query: string): Promise<unknown> {
    const client = createClient({
      url: s.url.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${TOKEN}` },
      retryAttempts: 0,
    });
    try {
      return await new Promise((resolve, reject) => {
        client.subscribe({ query }, { next: resolve, error: reject, complete: () => reject(new Error(`${query.slice(0, 60)}: completed without an event`)) });
      });
    } finally {
      await client.dispose();
    }
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lk-readme-run-'));
    // The default demo (no config), with authentication on so that the token examples run too.
    s = await startLockkeeper({ log: createLogger('silent'), env: { LOCKKEEPER_ADMIN_TOKEN: TOKEN }, cwd: dir, port: 0 });
    // Quicker than the demo's visible latencies; nothing else differs.
    const fast = await gql('mutation { simulation { setLatencies(input: { migrate: 60, stop: 30, start: 30, cutOver: 20, cordon: 5 }) { __typename } } }');
    expect(fast.errors).toBeUndefined();
  }, 60_000);

  afterAll(async () => {
    await s?.app.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('run in order as written', async () => {
    const all = examples();
    expect(all.filter((e) => e.operation.operation === 'mutation').length).toBeGreaterThanOrEqual(8);
    let lastOperation: string | null = null;
    for (const example of all) {
      const source = lastOperation ? example.source.replaceAll('"…"', `"${lastOperation}"`) : example.source;
      if (example.operation.operation === 'subscription') {
        expect(source, 'a subscription example needs an operation started before it').not.toContain('"…"');
        const event = (await firstEvent(source)) as { errors?: unknown[]; data?: unknown };
        expect(event.errors, source).toBeUndefined();
        expect(event.data, source).toBeTruthy();
        continue;
      }
      const result = await gql(source);
      expect(result.errors, source).toBeUndefined();
      const { types, operations } = walk(result.data);
      if (example.expect) expect(types, source).toContain(example.expect);
      else
        expect(
          types.filter((t) => t.endsWith('Error')),
          source,
        ).toEqual([]);
      if (example.operation.operation === 'mutation') {
        lastOperation = operations.at(-1) ?? lastOperation;
        await settle(source);
      }
    }
    // The examples left the demo as they found it: every maintenance ended, every node back in service.
    const end = await gql('{ nodes { edges { node { id maintenancePhase cordoned } } } }');
    expect(end.data.nodes.edges.map((e: any) => e.node)).toEqual(['1', '2', '3', '4'].map((id) => ({ id, maintenancePhase: null, cordoned: false })));
  }, 300_000);
});
