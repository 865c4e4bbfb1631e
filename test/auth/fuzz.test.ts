/**
 * Fuzz: 2 000 random or mutated payloads spread over every mutation (each gets its share,
 * simulation controls included), sent to a real listening server on loopback with an admin
 * token. Seeded, so a failure replays: FUZZ_SEED=<n> npx vitest run test/auth/fuzz.test.ts.
 *
 * Asserts: no HTTP 5xx, no unmasked internal error (yoga's "Unexpected error." is the
 * masked form; stack traces, file paths, Prisma/SQLite or JS runtime messages are not),
 * and the server still answering, during and after. Every payload is sent however loaded the
 * machine is: the count ends the run, never a clock (the long timeout only catches a hang).
 */
import {
  getNamedType,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  isEnumType,
  isLeafType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSchema } from '../../src/graphql/schema.ts';
import { startSecuredServer, type SecuredServer } from '../support/secured-server.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261130);
const PAYLOADS = 2000;
const CONCURRENCY = 8;

/** mulberry32 */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!,
    chance: (p: number) => next() < p,
  };
}
type Rng = ReturnType<typeof prng>;

const KNOWN_IDS = ['1', '2', '3', '4', '404', '0', '-1', 'node-1', 'default/vm-0', 't0/0', ''];
const STRINGS = [
  '',
  ' ',
  'Migrate',
  'Shutdown',
  'ShutdownAndRestartAfterEnable',
  '30d',
  '-5m',
  '99999999d',
  'null',
  '{}',
  '../../etc/passwd',
  '\'; DROP TABLE "AuditEntry"; --',
  '\u0000',
  '\ud800',
  '🚧',
  '%s%n',
  '${x}',
];

function randomString(rng: Rng): string {
  switch (rng.int(4)) {
    case 0:
      return rng.pick(STRINGS);
    case 1:
      return rng.pick(KNOWN_IDS);
    case 2:
      return Array.from({ length: rng.int(40) }, () => String.fromCharCode(rng.int(0x3000))).join('');
    default:
      return 'x'.repeat(rng.int(20_000));
  }
}

function randomJson(rng: Rng, depth = 0): unknown {
  switch (rng.int(depth > 2 ? 6 : 8)) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.pick([0, -1, 1, 2 ** 31, -(2 ** 53), 1e308, 0.5, -0.0001, 2 ** 31 - 1]);
    case 3:
    case 4:
    case 5:
      return randomString(rng);
    case 6:
      return Array.from({ length: rng.int(4) }, () => randomJson(rng, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: rng.int(4) }, () => [
          rng.pick(['migrate', 'stuck', 'failureRate', 'namespace', 'labels', 'key', 'value', randomString(rng)]),
          randomJson(rng, depth + 1),
        ]),
      );
  }
}

/** A value that fits the input type most of the time, and anything at all otherwise. */
function valueFor(type: GraphQLInputType, rng: Rng, depth = 0): unknown {
  if (rng.chance(0.15)) return randomJson(rng, depth);
  if (type instanceof GraphQLNonNull) return valueFor(type.ofType, rng, depth);
  if (rng.chance(0.1)) return null;
  if (type instanceof GraphQLList) return Array.from({ length: rng.int(4) }, () => valueFor(type.ofType, rng, depth + 1));
  if (type instanceof GraphQLInputObjectType) {
    return Object.fromEntries(
      Object.values(type.getFields())
        .filter(() => rng.chance(0.7))
        .map((f) => [f.name, valueFor(f.type, rng, depth + 1)]),
    );
  }
  if (isEnumType(type)) return rng.chance(0.9) ? rng.pick(type.getValues()).name : randomString(rng);
  if (isScalarType(type)) {
    switch (type.name) {
      case 'ID':
        return rng.chance(0.7) ? rng.pick(KNOWN_IDS) : randomString(rng);
      case 'Int':
        return rng.pick([0, 1, -1, 30, 3600, 2 ** 31 - 1, -(2 ** 31), rng.int(1000)]);
      case 'Float':
        return rng.pick([0, 0.5, 1, -1, 1e9, 1e308, rng.next()]);
      case 'Boolean':
        return rng.chance(0.5);
      case 'DateTime':
        return rng.pick(['2026-01-01T00:00:00Z', 'yesterday', '9999-12-31T23:59:59Z', '']);
      default:
        return randomString(rng);
    }
  }
  return randomJson(rng, depth);
}

interface Target {
  /** e.g. `startNodeDrain` or `simulation.restartNode`. */
  name: string;
  field: GraphQLField<unknown, unknown>;
  wrap: (inner: string) => string;
}

function targets(): Target[] {
  const schema = buildSchema({ simulation: true });
  const mutation = schema.getMutationType()!;
  const out: Target[] = [];
  for (const field of Object.values(mutation.getFields())) {
    const type = getNamedType(field.type);
    if (field.name === 'simulation' && type instanceof GraphQLObjectType) {
      for (const inner of Object.values(type.getFields())) out.push({ name: `simulation.${inner.name}`, field: inner, wrap: (s) => `simulation { ${s} }` });
    } else {
      out.push({ name: field.name, field, wrap: (s) => s });
    }
  }
  return out;
}

const selectionOf = (field: GraphQLField<unknown, unknown>) => (isLeafType(getNamedType(field.type)) ? '' : ' { __typename }');

function document(target: Target, rng: Rng, useVariables: boolean): { query: string; variables?: Record<string, unknown> } {
  const args = target.field.args.filter((a: GraphQLArgument) => a.type instanceof GraphQLNonNull || rng.chance(0.6));
  if (useVariables) {
    const defs = args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
    const call = args.length ? `(${args.map((a) => `${a.name}: $${a.name}`).join(', ')})` : '';
    const variables = Object.fromEntries(args.map((a) => [a.name, valueFor(a.type, rng)]));
    return { query: `mutation${defs ? `(${defs})` : ''} { ${target.wrap(`${target.field.name}${call}${selectionOf(target.field)}`)} }`, variables };
  }
  const literal = (v: unknown): string => {
    if (Array.isArray(v)) return `[${v.map(literal).join(', ')}]`;
    if (v !== null && typeof v === 'object')
      return `{ ${Object.entries(v)
        .map(([k, x]) => `${/^[_A-Za-z][_0-9A-Za-z]*$/.test(k) ? k : 'bad'}: ${literal(x)}`)
        .join(', ')} }`;
    if (typeof v === 'string') return /^[A-Z_]+$/.test(v) && rng.chance(0.5) ? v : JSON.stringify(v);
    return String(v);
  };
  const call = args.length ? `(${args.map((a) => `${a.name}: ${literal(valueFor(a.type, rng))}`).join(', ')})` : '';
  return { query: `mutation { ${target.wrap(`${target.field.name}${call}${selectionOf(target.field)}`)} }` };
}

/** Random edits: delete, insert, duplicate or replace characters. */
function mutate(text: string, rng: Rng): string {
  let s = text;
  for (let i = 0, n = 1 + rng.int(4); i < n; i++) {
    const at = rng.int(s.length + 1);
    switch (rng.int(4)) {
      case 0:
        s = s.slice(0, at) + s.slice(at + 1 + rng.int(5));
        break;
      case 1:
        s =
          s.slice(0, at) + rng.pick(['{', '}', '(', ')', '$', '"', '\\', ':', '!', '...', '@skip', '#', '\n', '__typename', 'mutation', '1e999']) + s.slice(at);
        break;
      case 2:
        s = s.slice(0, at) + s.slice(at, at + 20) + s.slice(at);
        break;
      default:
        s = s.slice(0, at) + String.fromCharCode(rng.int(128)) + s.slice(at + 1);
    }
  }
  return s;
}

interface Payload {
  target: string;
  contentType: string;
  body: string;
}

function payload(target: Target, rng: Rng): Payload {
  const kind = rng.int(10);
  const doc = document(target, rng, rng.chance(0.6));
  let body: string;
  if (kind < 5) body = JSON.stringify(doc);
  else if (kind < 8) body = rng.chance(0.5) ? JSON.stringify({ ...doc, query: mutate(doc.query, rng) }) : mutate(JSON.stringify(doc), rng);
  else {
    // The envelope itself: wrong shapes, batches, odd operation names.
    body = JSON.stringify(
      rng.pick<unknown>([
        { query: doc.query, variables: randomJson(rng) },
        { query: doc.query, operationName: randomString(rng) },
        { query: randomJson(rng) },
        [doc, doc],
        { ...doc, extensions: randomJson(rng) },
        randomJson(rng),
        { query: `${doc.query} ${doc.query}` },
      ]),
    );
  }
  const contentType = rng.chance(0.95)
    ? 'application/json'
    : rng.pick(['application/graphql-response+json', 'application/json; charset=latin1', 'application/json; x=y']);
  return { target: target.name, contentType, body };
}

/** Messages that would betray internals if they reached a client. */
const INTERNAL =
  /\n\s+at |node_modules|\/work\/|\.ts:\d+|prisma|sqlite|TypeError|ReferenceError|RangeError|Cannot read propert|undefined is not|is not a function|is not iterable|ECONN|EADDR|stack/i;

describe('fuzz: random and mutated payloads to every mutation', () => {
  let s: SecuredServer;
  beforeAll(async () => {
    s = await startSecuredServer({ security: { limits: { mutationsPerMinute: 0 } } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it(`${PAYLOADS} payloads (seed ${SEED}): no 5xx, no unmasked internal error, still answering`, async () => {
    const rng = prng(SEED);
    const all = targets();
    const payloads = Array.from({ length: PAYLOADS }, (_, i) => payload(all[i % all.length]!, rng));
    const problems: string[] = [];
    const statuses = new Map<number, number>();
    const perTarget = new Map<string, number>();
    let masked = 0;
    const maskedBy = new Map<string, number>();
    let sent = 0;

    async function send(p: Payload): Promise<void> {
      const res = await fetch(s.url, { method: 'POST', headers: { 'content-type': p.contentType, authorization: `Bearer ${s.tokens.admin}` }, body: p.body });
      const text = await res.text();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      perTarget.set(p.target, (perTarget.get(p.target) ?? 0) + 1);
      if (res.status >= 500) problems.push(`${res.status} for ${p.target}: ${p.body.slice(0, 300)} → ${text.slice(0, 300)}`);
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        // Only a refusal may answer without a JSON body (e.g. 415 for an unsupported charset).
        if (res.status < 400 || INTERNAL.test(text)) problems.push(`not JSON (${res.status}) for ${p.target}: ${text.slice(0, 200)}`);
        return;
      }
      for (const error of [json].flat().flatMap((r: any) => r?.errors ?? [])) {
        if (error.message === 'Unexpected error.') {
          masked++;
          maskedBy.set(p.target, (maskedBy.get(p.target) ?? 0) + 1);
          if (process.env.FUZZ_VERBOSE) console.info('masked', p.target, p.body.slice(0, 300));
          continue;
        }
        const shown = JSON.stringify(error);
        if (INTERNAL.test(error.message ?? '') || error.extensions?.stack || error.extensions?.originalError) {
          problems.push(`internal detail for ${p.target}: ${shown.slice(0, 400)} (payload ${p.body.slice(0, 200)})`);
        }
      }
    }

    let next = 0;
    const worker = async () => {
      while (next < payloads.length) {
        const p = payloads[next++]!;
        await send(p);
        sent++;
        if (sent % 250 === 0) expect((await fetch(`${s.base}/healthz`)).status).toBe(200);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));

    console.info(
      `fuzz seed ${SEED}: ${sent} payloads over ${all.length} mutations; statuses ${JSON.stringify(Object.fromEntries(statuses))}; masked errors ${masked} ${JSON.stringify(Object.fromEntries(maskedBy))}`,
    );
    expect(problems.slice(0, 10)).toEqual([]);
    expect(sent).toBe(PAYLOADS);
    for (const target of all) expect(perTarget.get(target.name), target.name).toBeGreaterThanOrEqual(Math.floor(PAYLOADS / all.length));
    // Still answering, over GraphQL and REST.
    const after = await s.gql('{ nodes { totalCount } auditLog(first: 1) { totalCount } }', { token: s.tokens.viewer });
    expect(after.status).toBe(200);
    expect(after.body.data.auditLog.totalCount).toBeGreaterThan(0);
    expect((await fetch(`${s.base}/control/v1/node`, { headers: { authorization: `Bearer ${s.tokens.viewer}` } })).status).toBe(200);
  }, 600_000);
});
