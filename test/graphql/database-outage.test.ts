/**
 * Issue 27, point 1: a database outage is an answer, not a crash. SQLite made unavailable by
 * fault injection in the store (Database.faults: every statement fails with SQLITE_IOERR;
 * tests run as root, so file permissions cannot do it). What a client sees while it lasts,
 * and that an event-log subscription rides it out. Waits are for states, never durations.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import { readinessAnswer } from '../../src/http/readiness.ts';
import { soleLeadership } from '../../src/leadership/leadership.ts';
import { createLogger } from '../../src/logger.ts';
import { buildApp, type App } from '../../src/server.ts';
import { createSimulatedCluster } from '../../plugins/fake/index.ts';
import { settle } from '../operations/drive.ts';
import { until } from '../support/child-server.ts';
import { startSecuredServer, type SecuredServer } from '../support/secured-server.ts';
import { openTestDatabase } from '../support/test-database.ts';
import { expectEachDeliveredOnce, followEventLog } from '../support/subscribers.ts';
import { VirtualClock } from '../support/virtual-clock.ts';

const topology = {
  nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
  shards: [0, 1, 2, 3].map((n) => ({ tenantId: 't', shardNumber: n, shardCount: 4, attachedNodeId: '1', secondaries: [{ nodeId: '2' }] })),
};

let s: SecuredServer | undefined;
let app: App | undefined;
afterEach(async () => {
  await s?.stop();
  await app?.stop();
  s = app = undefined;
});

describe('SQLite unavailable (fault injection in the store)', () => {
  it('ha:DB5: fields that need the database answer UNAVAILABLE naming it with a stable 200, mutations their typed result, an unknown token 503 with Retry-After, REST 503 in Neon’s shape, /readyz 200 with database: down; subscriptions stay open and resume without loss or repeat; the drain the outage stopped resumes', async () => {
    s = await startSecuredServer({ topology, dialect: 'sqlite' });
    const { t, tokens } = s;
    const file = t.db.file;
    const admin = tokens.admin;
    const drain = await s.gql(`mutation { startNodeDrain(nodeId: "1") { __typename ... on Operation { id } } }`, { token: admin });
    expect(drain.body.data.startNodeDrain.__typename).toBe('Operation');
    const log = await s.gql('{ eventLog(first: 1000) { events { seq } } }', { token: admin });
    const last: number = log.body.data.eventLog.events.at(-1).seq;
    const marker = last - 1;
    // Open before the outage, and seen delivering (the last event) so it is surely running.
    const before = followEventLog(s.ws(admin), marker);
    await until(() => (before.seqs.length === 1 ? true : undefined), 'the first subscription to deliver');

    t.db.faults!.unavailable(true);

    // A field that needs the database: UNAVAILABLE naming it, never "Unexpected error.", the same status each time.
    for (let i = 0; i < 2; i++) {
      const read = await s.gql('{ eventLog { events { seq } } }', { token: admin });
      expect(read.status).toBe(200);
      expect(read.body.errors).toHaveLength(1);
      expect(read.body.errors![0]!.extensions).toMatchObject({ code: 'UNAVAILABLE', database: file });
      expect(read.body.errors![0]!.message).toMatch(/^database unavailable: /);
      expect(read.body.errors![0]!.message).toContain(file);
    }
    // A typed result names it too (a running operation is answered from memory: one that is not).
    const op = await s.gql(`{ operation(id: "not-in-memory") { __typename ... on UnavailableError { code database message } } }`, { token: admin });
    expect(op.status).toBe(200);
    expect(op.body.data.operation).toMatchObject({ __typename: 'UnavailableError', code: 'UNAVAILABLE', database: file });
    // A mutation refused at admission: its typed UNAVAILABLE result, HTTP 200.
    const refused = await s.gql('mutation { configureNode(nodeId: "3", policy: PAUSE) { __typename ... on UnavailableError { code database } } }', {
      token: admin,
    });
    expect(refused.status).toBe(200);
    expect(refused.body.data.configureNode).toEqual({ __typename: 'UnavailableError', code: 'UNAVAILABLE', database: file });
    // What needs no database keeps answering: the backend's state.
    const nodes = await s.gql('{ nodes { edges { node { id schedulingPolicy } } } }', { token: admin });
    expect(nodes.status).toBe(200);
    expect(nodes.body.errors).toBeUndefined();
    expect(nodes.body.data.nodes.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(['1', '2', '3']);
    // A token the database never vouched for: refused before GraphQL runs, 503 with Retry-After, no data.
    for (let i = 0; i < 2; i++) {
      const res = await fetch(s.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens.viewer}` },
        body: JSON.stringify({ query: '{ nodes { totalCount } }' }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      const body = (await res.json()) as { data?: unknown; errors: { message: string; extensions: Record<string, unknown> }[] };
      expect(body.data).toBeUndefined();
      expect(body.errors[0]!.extensions.code).toBe('UNAVAILABLE');
      expect(body.errors[0]!.message).toContain(file);
    }
    // REST: 503 in Neon's shape.
    const rest = await fetch(`${s.base}/control/v1/node/3/drain`, { method: 'PUT', headers: { authorization: `Bearer ${admin}` } });
    expect(rest.status).toBe(503);
    expect(rest.headers.get('retry-after')).toBe('5');
    expect(((await rest.json()) as { msg: string }).msg).toMatch(/^database unavailable: .*lockkeeper\.db/);
    // Liveness and readiness: both 200, both saying the database is down; the metric says it too.
    const ready = await fetch(`${s.base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', phase: 'serving', database: 'down' });
    const health = await fetch(`${s.base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', database: 'down' });
    const metrics = await (await fetch(`${s.base}/metrics`, { headers: { authorization: `Bearer ${admin}` } })).text();
    expect(metrics).toMatch(/^lockkeeper_database_up 0$/m);
    expect(metrics).toMatch(/^lockkeeper_ready 1$/m);
    // A subscription opened during the outage does not fail.
    const during = followEventLog(s.ws(admin), marker);
    // The drain runs on into the outage: its moves go on at the backend, its writes fail.
    for (let i = 0; i < 40; i++) {
      await t.clock.advance(250);
      await new Promise((resolve) => setImmediate(resolve));
    }

    t.db.faults!.unavailable(false);
    expect(await t.app.database.check()).toBe('up');
    expect(await (await fetch(`${s.base}/readyz`)).json()).toEqual({ status: 'ready', phase: 'serving', database: 'up' });

    // The drain goes on to its end; both subscribers see every event after the marker once, in order.
    await settle(t, '1', { maxMs: 20_000 });
    const after = await s.gql(`{ eventLog(after: ${marker}, first: 1000) { events { seq } } }`, { token: admin });
    const expected: number[] = after.body.data.eventLog.events.map((e: { seq: number }) => e.seq);
    expect(expected.length).toBeGreaterThan(3);
    await expectEachDeliveredOnce(expected, [before, during]);
  });

  it('ha:DB6: /readyz answers 503 while the replica starts (other requests 503 with Retry-After); /healthz stays 200', async () => {
    const db = await openTestDatabase({ dialect: 'sqlite' });
    const sole = soleLeadership();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    app = buildApp({
      backend: createSimulatedCluster({ topology, clock: new VirtualClock() }),
      log: createLogger('silent'),
      prisma: db.prisma,
      hotPath: db.hotPath,
      config: DEFAULT_CONFIG,
      databaseName: db.file,
      leadership: { ...sole, start: async () => (await held, sole.start()) },
      onClose: () => db.close(),
    });
    const started = app.start(0, '127.0.0.1');
    const base = await until(async () => {
      const address = app!.server.address();
      return address && typeof address === 'object' ? `http://127.0.0.1:${address.port}` : undefined;
    }, 'the server to listen');
    const starting = await fetch(`${base}/readyz`);
    expect(starting.status).toBe(503);
    expect(await starting.json()).toEqual({ status: 'starting', phase: 'starting', database: 'up' });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const early = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ nodes { id } }"}' });
    expect(early.status).toBe(503);
    expect(early.headers.get('retry-after')).toBe('2');
    const earlyRest = await fetch(`${base}/control/v1/node`);
    expect(earlyRest.status).toBe(503);
    expect(await earlyRest.json()).toEqual({ msg: 'lockkeeper is starting; try again shortly' });

    release();
    await started;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    await app.stop();
    app = undefined;
  });
});

describe('readiness', () => {
  it('is 503 while stopping, whatever the database; 200 while serving, with the database’s state in the body', () => {
    expect(readinessAnswer({ phase: 'stopping', database: () => 'up' })).toEqual({
      status: 503,
      body: { status: 'stopping', phase: 'stopping', database: 'up' },
    });
    expect(readinessAnswer({ phase: 'serving', database: () => 'down' })).toEqual({
      status: 200,
      body: { status: 'ready', phase: 'serving', database: 'down' },
    });
  });
});
