/**
 * GraphQL over HTTP, the media-type rule (issue 15): a request whose document does not
 * parse or validate, whose variables do not coerce, or that a depth, cost or alias limit
 * refuses, answers 200 with `errors` when the client accepts only the legacy
 * `application/json`, and 4xx with `application/graphql-response+json`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

const LEGACY = 'application/json';
const GRAPHQL_RESPONSE = 'application/graphql-response+json';

async function post(accept: string, body: object) {
  const res = await t!.app.yoga.fetch('http://lockkeeper.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    body: (await res.json()) as { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] },
  };
}

const aliased = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: nodes(first: 1) { totalCount }`).join(' ')} }`;

const refusals: { name: string; body: object; message: RegExp; code?: string }[] = [
  { name: 'a document that does not parse', body: { query: '{ nodes { ' }, message: /Syntax Error/ },
  { name: 'a document that does not validate', body: { query: '{ nodez }' }, message: /Cannot query field "nodez"/ },
  { name: 'variables that do not coerce', body: { query: 'query($n: Int) { nodes(first: $n) { totalCount } }', variables: { n: 'many' } }, message: /\$n/ },
  { name: 'the depth limit', body: { query: '{ vms { edges { node { node { name } } } } }' }, message: /Query depth limit of 4 exceeded/, code: 'DEPTH_LIMIT' },
  {
    name: 'the cost limit',
    body: { query: '{ nodes(first: 1000) { edges { node { id name zone } } } }' },
    message: /Query Cost limit of 2000 exceeded/,
    code: 'COST_LIMIT',
  },
  { name: 'the alias limit', body: { query: aliased(4) }, message: /Aliases limit of 3 exceeded, found 4/, code: 'ALIAS_LIMIT' },
];

describe('GraphQL over HTTP: status by media type', () => {
  for (const r of refusals) {
    it(`${r.name}: 200 with errors for application/json, 4xx for application/graphql-response+json`, async () => {
      t = await createTestApp({ security: { limits: { maxDepth: 4, maxCost: 2000, maxAliases: 3 } } });
      const legacy = await post(LEGACY, r.body);
      expect(legacy.status).toBe(200);
      expect(legacy.type).toContain(LEGACY);
      expect(legacy.body.data).toBeUndefined();
      expect(legacy.body.errors?.[0]?.message).toMatch(r.message);
      if (r.code) expect(legacy.body.errors?.map((e) => e.extensions?.code)).toEqual([r.code]);

      const modern = await post(GRAPHQL_RESPONSE, r.body);
      expect(modern.status).toBeGreaterThanOrEqual(400);
      expect(modern.status).toBeLessThan(500);
      expect(modern.type).toContain(GRAPHQL_RESPONSE);
      expect(modern.body.errors?.[0]?.message).toMatch(r.message);
    });
  }

  it('a body that is not JSON is not a GraphQL request at all: 400 whatever the client accepts', async () => {
    t = await createTestApp();
    for (const accept of [LEGACY, GRAPHQL_RESPONSE]) {
      const res = await t.app.yoga.fetch('http://lockkeeper.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept },
        body: '{"query": ',
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('BAD_REQUEST');
    }
  });

  it('a document within every limit answers 200 in both media types, and the limits stay in force for the next one', async () => {
    t = await createTestApp({ security: { limits: { maxDepth: 4, maxCost: 2000, maxAliases: 3 } } });
    for (const accept of [LEGACY, GRAPHQL_RESPONSE]) {
      const ok = await post(accept, { query: aliased(3) });
      expect(ok.status).toBe(200);
      expect(ok.body.errors).toBeUndefined();
    }
    // __typename aliases are free (graphql-armor's allow list).
    expect((await post(GRAPHQL_RESPONSE, { query: '{ a: __typename b: __typename c: __typename d: __typename }' })).status).toBe(200);
  });
});
