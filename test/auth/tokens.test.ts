import { afterEach, describe, expect, it } from 'vitest';
import { ApiTokenStore } from '../../src/auth/token-store.ts';
import { hashToken } from '../../src/auth/tokens.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { firstOutcome, startSecuredServer, type SecuredServer } from '../support/secured-server.ts';
import { driveUntil } from '../operations/drive.ts';
import { untilSubscribed } from '../support/subscribers.ts';

let s: SecuredServer | undefined;
let t: TestApp | undefined;
afterEach(async () => {
  await s?.stop();
  await t?.stop();
  s = undefined;
  t = undefined;
});

/** A wall clock the test moves (token expiry). */
function wallClock() {
  let now = Date.now();
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

async function rest(base: string, method: string, path: string, token?: string | null, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token && { authorization: `Bearer ${token}` }), ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined, headers: res.headers };
}

describe('tokens', () => {
  it('caller names the calling token and its scope (the dashboard offers actions by it, issue 31 point 3); unauthenticated is refused', async () => {
    s = await startSecuredServer();
    for (const scope of ['viewer', 'operator', 'admin'] as const) {
      const res = await s.gql('{ caller { name scope } }', { token: s.tokens[scope] });
      expect(res.body).toEqual({ data: { caller: { name: `test-${scope}`, scope: scope.toUpperCase() } } });
    }
    const none = await s.gql('{ caller { name scope } }');
    expect(none.status).toBe(401);
  });

  it('createToken shows the token once; only its SHA-256 is stored; tokens lists name, scope, creator, use, expiry, revocation', async () => {
    s = await startSecuredServer();
    const created = await s.gql(
      'mutation { createToken(name: "ci-pipeline", scope: OPERATOR, expiresIn: "30d", reason: "CI") { __typename ... on CreatedToken { token apiToken { id name scope createdBy expiresAt revoked } } } }',
      { token: s.tokens.admin },
    );
    const { token, apiToken } = created.body.data.createToken;
    expect(token).toMatch(/^lk_[A-Za-z0-9_-]{43}$/);
    expect(apiToken).toMatchObject({ name: 'ci-pipeline', scope: 'OPERATOR', createdBy: 'test-admin', revoked: false });
    expect(new Date(apiToken.expiresAt).getTime() - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const row = await s.t.db.prisma.apiToken.findUniqueOrThrow({ where: { name: 'ci-pipeline' } });
    expect(row.tokenHash).toBe(hashToken(token));
    expect(JSON.stringify(row)).not.toContain(token.slice(3));

    // The token works, is recorded as used, and the secret never shows again.
    expect((await s.gql('{ nodes { totalCount } }', { token })).body.data.nodes.totalCount).toBe(4);
    const listed = await s.gql('{ tokens { name scope createdBy lastUsedAt expiresAt expired revoked } }', { token: s.tokens.admin });
    expect(JSON.stringify(listed.body)).not.toContain(token.slice(3));
    const ci = listed.body.data.tokens.find((x: { name: string }) => x.name === 'ci-pipeline');
    expect(ci).toMatchObject({ scope: 'OPERATOR', createdBy: 'test-admin', expired: false, revoked: false });
    expect(ci.lastUsedAt).not.toBeNull();

    // Names are unique forever; bad input is a typed error.
    const again = await s.gql('mutation { createToken(name: "ci-pipeline", scope: VIEWER) { __typename ... on Error { code message } } }', {
      token: s.tokens.admin,
    });
    expect(again.body.data.createToken).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    const bad = await s.gql('mutation { createToken(name: "has space", scope: VIEWER) { __typename ... on InvalidInputError { field } } }', {
      token: s.tokens.admin,
    });
    expect(bad.body.data.createToken).toMatchObject({ __typename: 'InvalidInputError', field: 'name' });
    const badExpiry = await s.gql('mutation { createToken(name: "x1", scope: VIEWER, expiresIn: "soon") { __typename ... on InvalidInputError { field } } }', {
      token: s.tokens.admin,
    });
    expect(badExpiry.body.data.createToken).toMatchObject({ __typename: 'InvalidInputError', field: 'expiresIn' });
    const unknown = await s.gql('mutation { revokeToken(token: "nobody") { __typename ... on TokenNotFoundError { code token } } }', { token: s.tokens.admin });
    expect(unknown.body.data.revokeToken).toEqual({ __typename: 'TokenNotFoundError', code: 'NOT_FOUND', token: 'nobody' });
  });

  it('the first token turns authentication on in a server that started without one', async () => {
    t = await createTestApp();
    expect(t.app.auth.enforced).toBe(false);
    expect((await t.gql('{ nodes { totalCount } }')).data.nodes.totalCount).toBe(4);
    const created = await t.gql('mutation { createToken(name: "first-admin", scope: ADMIN) { ... on CreatedToken { token } } }');
    expect(created.data.createToken.token).toMatch(/^lk_/);
    expect(t.app.auth.enforced).toBe(true);
    const anonymous = await t.gql('{ nodes { totalCount } }');
    expect(anonymous.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    // Revoking every token never re-opens a running server.
    await t.gql('mutation { revokeToken(token: "first-admin") { __typename } }');
    expect(t.app.auth.enforced).toBe(true);
  });
});

describe('revoked and expired tokens over HTTP', () => {
  it('are refused with 401 UNAUTHENTICATED and a message that says why', async () => {
    const clock = wallClock();
    s = await startSecuredServer({ security: { now: clock.now } });
    const made = await s.t.app.auth.createToken({ name: 'short-lived', scope: 'operator', expiresIn: '1h', createdBy: 'test' });
    expect((await s.gql('{ nodes { totalCount } }', { token: made.token })).status).toBe(200);

    clock.advance(3_600_001);
    const expired = await s.gql('{ nodes { totalCount } }', { token: made.token });
    expect(expired.status).toBe(401);
    expect(expired.body.errors?.[0]).toMatchObject({ extensions: { code: 'UNAUTHENTICATED' } });
    expect(expired.body.errors?.[0]?.message).toMatch(/short-lived.*expired/);

    await s.gql('mutation { revokeToken(token: "test-operator", reason: "leaked") { ... on ApiToken { revoked revokedBy } } }', { token: s.tokens.admin });
    const revoked = await s.gql('{ nodes { totalCount } }', { token: s.tokens.operator });
    expect(revoked.status).toBe(401);
    expect(revoked.body.errors?.[0]?.message).toMatch(/test-operator.*revoked/);

    for (const header of ['Bearer lk_not-a-real-token', 'Basic dXNlcjpwYXNz', 'Bearer']) {
      const res = await fetch(s.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: header },
        body: JSON.stringify({ query: '{ nodes { totalCount } }' }),
      });
      expect(res.status, header).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('Bearer');
    }
  });
});

describe('revoked and expired tokens over graphql-ws', () => {
  it('a revoked token is refused at connection_init with close code 4403', async () => {
    s = await startSecuredServer();
    await s.t.app.auth.revokeToken('test-viewer', 'test');
    const outcome = await firstOutcome(s.ws(s.tokens.viewer), 'subscription { nodeChanged { id } }', () => s!.t.app.bus.subscribers('nodeChanged') > 0);
    expect(outcome).toMatchObject({ kind: 'error', error: { code: 4403 } });
    // `{ token }` in the payload works as well as `{ authorization }`.
    const { createClient } = await import('graphql-ws');
    const { default: WebSocket } = await import('ws');
    const client = createClient({ url: s.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { token: s.tokens.operator } });
    const ok = await firstOutcome(client, 'subscription { nodeChanged { id } }', () => s!.t.app.bus.subscribers('nodeChanged') > 0);
    expect(ok.kind).toBe('listening');
    await client.dispose();
  });

  it('an open subscription ends (close 4403) when its token is revoked by the revokeToken mutation', async () => {
    // At once, not on the periodic re-check: with an hour between re-checks, only the mutation can end it.
    s = await startSecuredServer({ security: { auth: { recheckIntervalMs: 3_600_000 } } });
    let resolveClose!: (e: { code: number; reason: string }) => void;
    const closedEvent = new Promise<{ code: number; reason: string }>((r) => (resolveClose = r));
    const client = s.ws(s.tokens.viewer, { onClosed: (e) => resolveClose(e) });
    const ended = new Promise<string>((resolve) => {
      client.subscribe(
        { query: 'subscription { nodeChanged { id } }' },
        { next: () => {}, error: () => resolve('error'), complete: () => resolve('complete') },
      );
    });
    await untilSubscribed(s.t.app.bus, 'nodeChanged');
    await s.gql('mutation { revokeToken(token: "test-viewer") { __typename } }', { token: s.tokens.admin });
    expect(await ended).toBe('error');
    const event = await closedEvent;
    expect(event.code).toBe(4403);
    expect(event.reason).toMatch(/revoked/);
  });

  it('revocation by the CLI (straight into the database) and expiry end open subscriptions within the re-check interval', async () => {
    const clock = wallClock();
    s = await startSecuredServer({ security: { now: clock.now, auth: { recheckIntervalMs: 100 } } });
    const watch = (token: string) => {
      let resolveClose!: (e: { code: number; reason: string }) => void;
      const closedEvent = new Promise<{ code: number; reason: string }>((r) => (resolveClose = r));
      const client = s!.ws(token, { onClosed: (e) => resolveClose(e) });
      client.subscribe({ query: 'subscription { workloadChanged { id } }' }, { next: () => {}, error: () => {}, complete: () => {} });
      return closedEvent;
    };
    const short = await s.t.app.auth.createToken({ name: 'short', scope: 'viewer', expiresIn: '1m', createdBy: 'test' });
    const byCli = watch(s.tokens.operator);
    const byExpiry = watch(short.token);
    await untilSubscribed(s.t.app.bus, 'workloadChanged', 2);
    // Another process (lockkeeper token revoke) writes the database; this server learns it on re-check.
    await new ApiTokenStore(s.t.db.prisma).revoke('test-operator', 'cli:ops', new Date());
    clock.advance(61_000);
    expect(await byCli).toMatchObject({ code: 4403, reason: expect.stringMatching(/revoked/) });
    expect(await byExpiry).toMatchObject({ code: 4403, reason: expect.stringMatching(/expired/) });
  });
});

describe('the Neon REST facade', () => {
  it('401 without a token, 403 with a too-weak scope; GET viewer, drain/fill operator, config admin; audited with the token name', async () => {
    s = await startSecuredServer();
    const { base, tokens } = s;
    expect((await rest(base, 'GET', '/control/v1/node')).status).toBe(401);
    expect((await rest(base, 'GET', '/control/v1/node', 'lk_bogus')).status).toBe(401);
    expect((await rest(base, 'GET', '/control/v1/node', tokens.viewer)).status).toBe(200);
    const denied = await rest(base, 'PUT', '/control/v1/node/1/drain', tokens.viewer);
    expect(denied.status).toBe(403);
    expect(denied.json.msg).toMatch(/viewer.*operator/);
    expect((await rest(base, 'PUT', '/control/v1/node/1/drain?reason=kernel', tokens.operator)).status).toBe(202);
    expect((await rest(base, 'DELETE', '/control/v1/node/1/drain', tokens.operator)).status).toBe(202);
    // neon:E6: no config while any drain runs, so wait for the cancelled one to end.
    await driveUntil(s.t, () => s!.t.app.storage.activeOperation('1') === null);
    expect((await rest(base, 'PUT', '/control/v1/node/2/config', tokens.operator, { node_id: 2, scheduling: 'Pause' })).status).toBe(403);
    expect((await rest(base, 'PUT', '/control/v1/node/2/config', tokens.admin, { node_id: 2, scheduling: 'Pause' })).status).toBe(200);

    const rows = await s.t.db.prisma.auditEntry.findMany({ orderBy: { at: 'asc' } });
    expect(rows.map((r) => [r.actor, r.action, r.outcome])).toEqual([
      ['test-operator', 'PUT /control/v1/node/:node_id/drain', 'OK'],
      ['test-operator', 'DELETE /control/v1/node/:node_id/drain', 'OK'],
      ['test-admin', 'PUT /control/v1/node/:node_id/config', 'OK'],
    ]);
    expect(rows[0]!.reason).toBe('kernel');

    // Revoked and expired tokens: 401.
    await s.t.app.auth.revokeToken('test-operator', 'test');
    expect((await rest(base, 'PUT', '/control/v1/node/1/fill', tokens.operator)).status).toBe(401);
    await s.t.db.prisma.apiToken.update({ where: { name: 'test-admin' }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const expired = await rest(base, 'GET', '/control/v1/node', tokens.admin);
    expect(expired.status).toBe(401);
    expect(expired.json.msg).toMatch(/expired/);
  });
});

describe('/metrics', () => {
  it('needs viewer when authentication is on (default), or nothing with auth.metrics "public"', async () => {
    s = await startSecuredServer();
    expect((await fetch(`${s.base}/metrics`)).status).toBe(401);
    const ok = await fetch(`${s.base}/metrics`, { headers: { authorization: `Bearer ${s.tokens.viewer}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('# TYPE');
    expect((await fetch(`${s.base}/healthz`)).status).toBe(200);
    await s.stop();
    s = await startSecuredServer({ security: { auth: { metrics: 'public' } } });
    expect((await fetch(`${s.base}/metrics`)).status).toBe(200);
  });
});
