/**
 * The pageserver simulator checked against Neon's own published API (issue 28 point 2):
 * `pageserver/src/http/openapi_spec.yml` of neondatabase/neon, kept unchanged as data in
 * test/support/schemas/neon/openapi_spec.yml (its commit and sha256 are recorded in the
 * overlay and checked on load), plus test/support/schemas/neon/overlay.json: the corrections
 * where that spec is stale against the Rust API types of the same commit, each citing its
 * file and line. Compiled with ajv once per process.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ValidateFunction } from 'ajv';
import { load as parseYaml } from 'js-yaml';
import { openApiAjv } from './openapi-ajv.ts';

const DIR = resolve(dirname(fileURLToPath(import.meta.url)), 'schemas/neon');

type Json = Record<string, unknown>;

interface OverlayEntry {
  pointer: string;
  value: unknown;
  /** `path/in/neon.rs:LINE` at the spec's commit. */
  cite: string;
  why: string;
}

export interface Overlay {
  spec: { repository: string; path: string; commit: string; sha256: string };
  corrections: OverlayEntry[];
}

const unescape = (token: string) => token.replace(/~1/g, '/').replace(/~0/g, '~');

/** Sets `value` at the JSON pointer; its parent must already exist (a correction targets the spec's own structure). */
function setAt(doc: Json, pointer: string, value: unknown): void {
  const tokens = pointer.split('/').slice(1).map(unescape);
  let node: Json = doc;
  for (const t of tokens.slice(0, -1)) {
    const next = node[t];
    if (!next || typeof next !== 'object') throw new Error(`overlay: ${pointer}: no ${t} in the spec`);
    node = next as Json;
  }
  node[tokens.at(-1)!] = structuredClone(value);
}

/**
 * The schemas as a pageserver applies them: an object with declared properties takes no
 * other field. Neon's request types either refuse unknown fields (`deny_unknown_fields`) or
 * drop them silently, and its responses serialize exactly their struct: either way a field
 * nobody declared is a bug in whoever wrote it.
 */
function asServed(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(asServed);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v as Json).map(([f, s]) => [f, asServed(s)])) : asServed(v);
  }
  if (typeof out.$ref === 'string' && out.$ref.startsWith('#/')) out.$ref = `neon${out.$ref}`;
  if (out.type === 'object' && out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

interface Operation {
  requestBody?: { required?: boolean; content?: { 'application/json'?: { schema?: unknown } } };
  parameters?: Parameter[];
  responses?: Record<string, { content?: { 'application/json'?: { schema?: unknown } } }>;
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: { type?: string };
}
interface Route {
  template: string;
  pattern: RegExp;
  method: string;
  op: Operation;
  parameters: Parameter[];
}

interface Exchange {
  method: string;
  path: string;
  query: Record<string, string>;
  /** The parsed request body (null without one). */
  body: unknown;
}

export interface NeonSchemas {
  overlay: Overlay;
  /** The schema errors of a request, [] when Neon's API takes it. */
  checkRequest(x: Exchange): string[];
  /** The schema errors of an answer to `x`, [] when Neon's API could have sent it. */
  checkResponse(x: Exchange, status: number, body: unknown): string[];
}

let loaded: NeonSchemas | undefined;

export function readOverlay(): Overlay {
  return JSON.parse(readFileSync(resolve(DIR, 'overlay.json'), 'utf8')) as Overlay;
}

/** Neon's pageserver API (spec + overlay), compiled once per process. */
export function neonSchemas(): NeonSchemas {
  if (loaded) return loaded;
  const raw = readFileSync(resolve(DIR, 'openapi_spec.yml'));
  const overlay = readOverlay();
  const sha256 = createHash('sha256').update(raw).digest('hex');
  if (sha256 !== overlay.spec.sha256)
    throw new Error(`openapi_spec.yml is not the file of ${overlay.spec.commit} (sha256 ${sha256}, expected ${overlay.spec.sha256})`);
  const spec = parseYaml(raw.toString('utf8')) as Json;
  for (const c of overlay.corrections) setAt(spec, c.pointer, c.value);
  const served = asServed(spec) as { paths: Record<string, Record<string, unknown>>; components: Json };
  const ajv = openApiAjv({
    // The spec marks ids and LSNs alike `format: hex`: an id is lowercase hex, an Lsn is
    // serialized as its Display, `{:X}/{:X}` (libs/utils/src/lsn.rs).
    hex: /^([0-9a-f]+|[0-9A-F]{1,8}\/[0-9A-F]{1,8})$/,
  });
  ajv.addSchema({ $id: 'neon', components: served.components });

  const routes: Route[] = [];
  for (const [template, item] of Object.entries(served.paths)) {
    const shared = (item.parameters as Parameter[] | undefined) ?? [];
    for (const method of ['get', 'put', 'post', 'patch', 'delete']) {
      const op = item[method] as Operation | undefined;
      if (!op) continue;
      const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
      routes.push({ template, pattern, method: method.toUpperCase(), op, parameters: [...shared, ...(op.parameters ?? [])] });
    }
  }
  // A literal segment wins over a parameter (`/v1/tenant/config` is not `/v1/tenant/{tenant_id}`).
  routes.sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
  const route = (x: Exchange) => routes.find((r) => r.method === x.method && r.pattern.test(x.path));

  const compiled = new Map<string, ValidateFunction>();
  const validator = (key: string, schema: unknown) => {
    let v = compiled.get(key);
    if (!v) compiled.set(key, (v = ajv.compile(schema as Json)));
    return v;
  };
  const errorsOf = (what: string, v: ValidateFunction, value: unknown): string[] => {
    if (v(value)) return [];
    const e = v.errors![0]!;
    const extra = e.keyword === 'additionalProperties' ? ` (${(e.params as { additionalProperty: string }).additionalProperty})` : '';
    return [`${what}: ${e.instancePath || '/'} ${e.message}${extra}`];
  };
  const queryValue = (type: string | undefined, value: string) =>
    type === 'integer' ? /^-?[0-9]+$/.test(value) : type === 'boolean' ? value === 'true' || value === 'false' : true;

  loaded = {
    overlay,
    checkRequest(x) {
      const r = route(x);
      const name = `${x.method} ${x.path}`;
      if (!r) return [`${name}: no such route in Neon's pageserver API`];
      const errors: string[] = [];
      for (const p of r.parameters.filter((p) => p.in === 'query')) {
        const value = x.query[p.name];
        if (value === undefined ? p.required : !queryValue(p.schema?.type, value))
          errors.push(`${name}: query ${p.name}=${value ?? ''} is not a ${p.schema?.type}`);
      }
      const schema = r.op.requestBody?.content?.['application/json']?.schema;
      if (schema && (x.body !== null || r.op.requestBody?.required)) {
        errors.push(...errorsOf(`${name} request`, validator(`${r.method} ${r.template} request`, schema), x.body));
      }
      return errors;
    },
    checkResponse(x, status, body) {
      const r = route(x);
      if (!r) return [];
      const name = `${x.method} ${x.path} answered ${status}`;
      const declared = r.op.responses?.[String(status)];
      const schema = declared?.content?.['application/json']?.schema;
      if (schema) return errorsOf(name, validator(`${r.method} ${r.template} ${status}`, schema), body);
      // Every ApiError is answered as Neon's `{"msg": …}` (HttpErrorBody).
      if (status >= 400) return errorsOf(name, validator('error', { $ref: 'neon#/components/schemas/Error' }), body);
      if (declared) return [];
      return [`${name}: Neon's API declares no ${status} answer for ${r.method} ${r.template}`];
    },
  };
  return loaded;
}
