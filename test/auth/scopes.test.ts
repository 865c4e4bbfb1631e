import { GraphQLObjectType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopeAllows, type Scope } from '../../src/auth/scopes.ts';
import { buildSchema } from '../../src/graphql/schema.ts';
import { firstOutcome, startSecuredServer, type SecuredServer } from '../support/secured-server.ts';
import { MUTATIONS, QUERIES_ABOVE_VIEWER, queryOf, SIMULATION_MUTATIONS, SUBSCRIPTIONS, type Entry } from './scope-table.ts';
import { untilSubscribed } from '../support/subscribers.ts';

const schema = buildSchema({ simulation: true });
const fieldsOf = (type: GraphQLObjectType | null | undefined) => Object.keys(type?.getFields() ?? {}).sort();
const CALLERS = ['none', 'viewer', 'operator', 'admin'] as const;
type Caller = (typeof CALLERS)[number];
const allows = (caller: Caller, needed: Scope) => caller !== 'none' && scopeAllows(caller, needed);

describe('the scope table covers the schema', () => {
  it('lists every mutation (add a new one to test/auth/scope-table.ts with its scope)', () => {
    expect(fieldsOf(schema.getMutationType())).toEqual(Object.keys(MUTATIONS).sort());
  });

  it('lists every subscription', () => {
    expect(fieldsOf(schema.getSubscriptionType())).toEqual(Object.keys(SUBSCRIPTIONS).sort());
  });

  it('lists every control of the simulated cluster', () => {
    expect(fieldsOf(schema.getType('SimulationMutation') as GraphQLObjectType)).toEqual(Object.keys(SIMULATION_MUTATIONS).sort());
  });

  it('gives every root field exactly the scope the table says (viewer for the other queries)', () => {
    const expected: [string, Record<string, Entry>, Scope | undefined][] = [
      ['Query', QUERIES_ABOVE_VIEWER, 'viewer'],
      ['Mutation', MUTATIONS, undefined],
      ['Subscription', SUBSCRIPTIONS, undefined],
    ];
    for (const [typeName, table, fallback] of expected) {
      const type = schema.getType(typeName) as GraphQLObjectType;
      for (const [name, field] of Object.entries(type.getFields())) {
        const scope = table[name]?.scope ?? fallback;
        const options = (field.extensions as { pothosOptions?: { authScopes?: unknown } }).pothosOptions;
        expect(options?.authScopes, `${typeName}.${name}`).toEqual({ [scope!]: true });
      }
    }
  });
});

describe('each scope against each mutation, subscription and query needing more than viewer', () => {
  let s: SecuredServer;
  const tokenOf = (caller: Caller) => (caller === 'none' ? null : s.tokens[caller]);
  const auditCount = () => s.t.db.prisma.auditEntry.count();

  beforeAll(async () => {
    s = await startSecuredServer();
    // One entry in the event log, so an accepted eventLog(after: 0) answers at once.
    await s.t.db.prisma.event.create({ data: { at: new Date(), type: 'TEST_MARKER', payload: '{}' } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  for (const [name, entry] of [...Object.entries(MUTATIONS), ...Object.entries(QUERIES_ABOVE_VIEWER)]) {
    it(`${name} needs ${entry.scope}`, async () => {
      for (const caller of CALLERS) {
        const before = await auditCount();
        const { status, body } = await s.gql(queryOf(entry), { token: tokenOf(caller) });
        const codes = (body.errors ?? []).map((e) => e.extensions?.code);
        if (allows(caller, entry.scope)) {
          expect(codes, `${caller} → ${name}: ${JSON.stringify(body.errors)}`).not.toContain('FORBIDDEN');
          expect(codes).not.toContain('UNAUTHENTICATED');
          expect(status, `${caller} → ${name}`).toBe(200);
          expect(body.data?.[name], `${caller} → ${name}`).toBeTruthy();
        } else {
          const code = caller === 'none' ? 'UNAUTHENTICATED' : 'FORBIDDEN';
          expect(codes, `${caller} → ${name}`).toEqual([code]);
          expect(status).toBe(caller === 'none' ? 401 : 403);
          expect(body.errors![0]!.message).toContain(`needs`);
          expect(body.data ?? null).toBeNull();
          // Refused before the resolver: nothing ran, nothing was audited.
          expect(await auditCount(), `${caller} → ${name} left an audit row`).toBe(before);
        }
      }
    });
  }

  for (const [name, entry] of Object.entries(SUBSCRIPTIONS)) {
    it(`subscription ${name} needs ${entry.scope} (graphql-ws)`, async () => {
      // Accepted shows as a message or NOT_FOUND (eventLog, operationProgress) or as a new listener on the bus.
      const topic = name === 'nodeChanged' || name === 'workloadChanged' ? name : null;
      const listening = () => topic !== null && s.t.app.bus.subscribers(topic) > 0;
      for (const caller of CALLERS) {
        await untilUnsubscribed(topic);
        const outcome = await firstOutcome(s.ws(tokenOf(caller)), queryOf(entry), listening);
        expect(outcome.kind, `${caller} → ${name}`).not.toBe('silent');
        if (caller === 'none') {
          // No token: the connection itself is refused.
          expect(outcome.kind).toBe('error');
          expect((outcome as { error: { code: number } }).error.code).toBe(4403);
          continue;
        }
        const codes = outcome.kind === 'error' && Array.isArray(outcome.error) ? outcome.error.map((e: any) => e.extensions?.code) : [];
        if (allows(caller, entry.scope)) expect(codes, `${caller} → ${name}`).not.toContain('FORBIDDEN');
        else expect(codes, `${caller} → ${name}`).toEqual(['FORBIDDEN']);
      }
    });
  }

  /** The subscriptions of earlier callers have ended (their listeners are gone). */
  async function untilUnsubscribed(topic: string | null): Promise<void> {
    while (topic !== null && s.t.app.bus.subscribers(topic) > 0) await new Promise((r) => setTimeout(r, 5));
  }

  it('an allowed subscription streams events (viewer sees a node restart)', async () => {
    await untilUnsubscribed('nodeChanged');
    const client = s.ws(s.tokens.viewer);
    const events: any[] = [];
    const done = new Promise<void>((resolve, reject) => {
      client.subscribe(
        { query: 'subscription { nodeChanged(nodeId: "2") { id availability } }' },
        {
          next: (m) => {
            events.push(m.data);
            resolve();
          },
          error: reject,
          complete: () => resolve(),
        },
      );
    });
    await untilSubscribed(s.t.app.bus, 'nodeChanged');
    const restart = await s.gql('mutation { simulation { restartNode(nodeId: "2") { __typename } } }', { token: s.tokens.admin });
    expect(restart.body.data.simulation.restartNode.__typename).toBe('ClusterNode');
    await done;
    expect(events[0].nodeChanged).toMatchObject({ id: '2', availability: 'OFFLINE' });
  });

  it('queries need a token: without one every field is UNAUTHENTICATED, introspection still answers (GraphiQL)', async () => {
    const res = await s.gql('{ nodes { totalCount } }');
    expect(res.status).toBe(401);
    expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const intro = await s.gql('{ __schema { queryType { name } } }');
    expect(intro.body.data.__schema.queryType.name).toBe('Query');
    const viewer = await s.gql('{ nodes { totalCount } }', { token: s.tokens.viewer });
    expect(viewer.body.data.nodes.totalCount).toBe(4);
  });
});
