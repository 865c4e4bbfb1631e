import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { generateTopology } from '../../plugins/fake/index.ts';
import { startSecuredServer, type SecuredServer } from '../support/secured-server.ts';

let s: SecuredServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

const codes = (body: { errors?: { extensions?: Record<string, unknown> }[] }) => (body.errors ?? []).map((e) => e.extensions?.code);

describe('abuse limits: each refusal is a clear error, never a crash', () => {
  it('query depth limit', async () => {
    s = await startSecuredServer({ security: { limits: { maxDepth: 4 } } });
    expect((await s.gql('{ vms { edges { node { id } } } }', { token: s.tokens.viewer })).status).toBe(200);
    const res = await s.gql('{ vms { edges { node { node { name } } } } }', { token: s.tokens.viewer });
    // A plain application/json client: 200 with errors (GraphQL over HTTP; see test/graphql/http-status.test.ts).
    expect(res.status).toBe(200);
    expect(res.body.data).toBeUndefined();
    expect(codes(res.body)).toEqual(['DEPTH_LIMIT']);
    expect(res.body.errors![0]!.message).toMatch(/Query depth limit of 4 exceeded/);
    // Introspection (GraphiQL's is deeper than that) is exempt.
    const intro = await s.gql('{ __schema { types { fields { type { ofType { ofType { ofType { name } } } } } } } }', { token: s.tokens.viewer });
    expect(intro.status).toBe(200);
  });

  it('query cost limit: aliases and large pages add up', async () => {
    s = await startSecuredServer();
    const aliases = Array.from({ length: 15 }, (_, i) => `a${i}: vms(first: 1000) { edges { node { id name } } }`).join(' ');
    const res = await s.gql(`{ ${aliases} }`, { token: s.tokens.viewer });
    expect(res.status).toBe(200);
    expect(res.body.data).toBeUndefined();
    expect(codes(res.body)).toEqual(['COST_LIMIT']);
    expect(res.body.errors![0]!.message).toMatch(/Query Cost limit of 50000 exceeded/);
    const fine = await s.gql('{ vms(first: 100) { edges { node { id name } } } }', { token: s.tokens.viewer });
    expect(fine.status).toBe(200);
  });

  it('alias limit: 2000 aliased fields in one query are refused before anything runs; __typename is free', async () => {
    s = await startSecuredServer();
    const listVms = () => (s!.t.cluster.callCounts.get('listVms') ?? 0) + (s!.t.cluster.callCounts.get('pageVms') ?? 0);
    const before = listVms();
    const aliases = Array.from({ length: 2000 }, (_, i) => `a${i}: vms(first: 1) { totalCount }`).join(' ');
    const res = await s.gql(`{ ${aliases} }`, { token: s.tokens.viewer });
    expect(res.body.data).toBeUndefined();
    expect(codes(res.body)).toContain('ALIAS_LIMIT');
    expect(res.body.errors!.find((e) => e.extensions?.code === 'ALIAS_LIMIT')!.message).toBe('Aliases limit of 15 exceeded, found 2000.');
    expect(listVms()).toBe(before);
    const fifteen = Array.from({ length: 15 }, (_, i) => `a${i}: vms(first: 1) { totalCount }`).join(' ');
    expect((await s.gql(`{ ${fifteen} t1: __typename t2: __typename }`, { token: s.tokens.viewer })).body.errors).toBeUndefined();
  });

  it('page sizes are capped at 1000 (connections and the audit log)', async () => {
    s = await startSecuredServer({ topology: generateTopology({ nodes: 2, vmsPerNode: 600 }) });
    const res = await s.gql('query($n: Int) { vms(first: $n) { totalCount edges { node { id } } } }', { token: s.tokens.viewer, variables: { n: 1_000_000 } });
    expect(res.body.data.vms.totalCount).toBe(1200);
    expect(res.body.data.vms.edges).toHaveLength(1000);
    for (let i = 0; i < 3; i++) await s.gql('mutation { configureNode(nodeId: "404", policy: ACTIVE) { __typename } }', { token: s.tokens.admin });
    const audit = await s.gql('query($n: Int) { auditLog(first: $n) { edges { node { id } } } }', { token: s.tokens.viewer, variables: { n: 1_000_000 } });
    expect(audit.body.data.auditLog.edges).toHaveLength(3);
    const negative = await s.gql('{ auditLog(first: -1) { totalCount } }', { token: s.tokens.viewer });
    expect(codes(negative.body)).toEqual(['BAD_USER_INPUT']);
  });

  it('request body size: HTTP GraphQL and REST answer 413, a WebSocket message over the limit closes the socket', async () => {
    s = await startSecuredServer({ security: { limits: { maxBodyBytes: 4096 } } });
    const big = JSON.stringify({ query: `{ nodes { totalCount } } # ${'x'.repeat(10_000)}` });
    const res = await fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${s.tokens.viewer}` }, body: big });
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
    const rest = await fetch(`${s.base}/control/v1/node/1/config`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${s.tokens.admin}` },
      body: 'x'.repeat(10_000),
    });
    expect(rest.status).toBe(413);

    const socket = new WebSocket(s.wsUrl, 'graphql-transport-ws');
    await new Promise((r) => socket.once('open', r));
    const closed = new Promise<number>((r) => socket.once('close', (code) => r(code)));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { token: s.tokens.viewer, pad: 'x'.repeat(10_000) } }));
    expect(await closed).toBe(1009);
    // Still answering.
    expect((await s.gql('{ nodes { totalCount } }', { token: s.tokens.viewer })).status).toBe(200);
  });

  it('mutations are rate limited per token (GraphQL 429 with Retry-After, REST 429); other tokens are not affected', async () => {
    let now = Date.now();
    s = await startSecuredServer({ security: { limits: { mutationsPerMinute: 3 }, now: () => now } });
    const drain = 'mutation { cancelNodeDrain(nodeId: "404") { __typename } }';
    for (let i = 0; i < 3; i++) expect((await s.gql(drain, { token: s.tokens.operator })).status).toBe(200);
    const limited = await fetch(s.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${s.tokens.operator}` },
      body: JSON.stringify({ query: drain }),
    });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    const body = (await limited.json()) as any;
    expect(body.errors[0]).toMatchObject({ extensions: { code: 'RATE_LIMITED' } });
    expect(body.errors[0].message).toMatch(/at most 3 mutations per minute for token "test-operator"/);
    const rest = await fetch(`${s.base}/control/v1/node/1/drain`, { method: 'DELETE', headers: { authorization: `Bearer ${s.tokens.operator}` } });
    expect(rest.status).toBe(429);
    // Queries are not limited; another token has its own budget; aliases count one each.
    expect((await s.gql('{ nodes { totalCount } }', { token: s.tokens.operator })).status).toBe(200);
    expect((await s.gql(drain, { token: s.tokens.admin })).status).toBe(200);
    const packed = await s.gql(
      `mutation { a: cancelNodeDrain(nodeId: "1") { __typename } b: cancelNodeDrain(nodeId: "2") { __typename } c: cancelNodeDrain(nodeId: "3") { __typename } }`,
      {
        token: s.tokens.admin,
      },
    );
    expect(codes(packed.body)).toEqual(['RATE_LIMITED']);
    // The budget refills.
    now += 60_000;
    expect((await s.gql(drain, { token: s.tokens.operator })).status).toBe(200);
  });
});
