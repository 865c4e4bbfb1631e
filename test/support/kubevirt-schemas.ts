/**
 * KubeVirt's kinds checked against KubeVirt's own OpenAPI definitions (issue 26 point 6):
 * `api/openapi-spec/swagger.json` of kubevirt/kubevirt, kept as data in
 * test/support/schemas/kubevirt/definitions.json (the definitions these kinds reach, unchanged,
 * with the commit and the whole file's sha256) and compiled here with ajv. No npm package
 * carries validators for these kinds. `LOCKKEEPER_KUBEVIRT_SWAGGER` points at another copy
 * (a whole swagger.json of the same commit) to check against.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ValidateFunction } from 'ajv';
import { openApiAjv } from './openapi-ajv.ts';

/** The commit the definitions must come from (recorded with the data, checked on load). */
export const KUBEVIRT_SWAGGER_COMMIT = 'd923fdb815cd2016ddaebdaaa51db04133576d72';

/** apiVersion/kind → the swagger definition that describes it. */
const ROOTS: Record<string, string> = {
  'kubevirt.io/v1/VirtualMachine': 'v1.VirtualMachine',
  'kubevirt.io/v1/VirtualMachineInstance': 'v1.VirtualMachineInstance',
  'kubevirt.io/v1/VirtualMachineInstanceMigration': 'v1.VirtualMachineInstanceMigration',
  'kubevirt.io/v1/KubeVirt': 'v1.KubeVirt',
  'migrations.kubevirt.io/v1alpha1/MigrationPolicy': 'v1alpha1.MigrationPolicy',
};

/** The definitions: `LOCKKEEPER_KUBEVIRT_SWAGGER`, else the copy kept in this repository. */
function kubevirtSwaggerPath(): string | null {
  const explicit = process.env.LOCKKEEPER_KUBEVIRT_SWAGGER;
  if (explicit) return existsSync(explicit) ? explicit : null;
  return resolve(dirname(fileURLToPath(import.meta.url)), 'schemas/kubevirt/definitions.json');
}

type Json = Record<string, unknown>;

/**
 * The swagger definitions as the API server applies them: `int-or-string` and quantities
 * take an integer or a string (their JSON forms, the definitions say only "string"), and an
 * object with declared properties takes no other field (a structural schema prunes unknown
 * fields and `fieldValidation=Strict` rejects them: either way a field nobody declared is a
 * bug in whoever wrote it).
 */
function asServed(node: unknown, name?: string): unknown {
  if (Array.isArray(node)) return node.map((n) => asServed(n));
  if (!node || typeof node !== 'object') return node;
  const o = node as Json;
  if (o.format === 'int-or-string' || name === 'k8s.io.apimachinery.pkg.api.resource.Quantity') {
    return { description: o.description, anyOf: [{ type: 'integer' }, { type: 'string' }] };
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(o)) {
    // `properties` holds field names, not schemas' keywords: a field may be called "format".
    out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v as Json).map(([f, s]) => [f, asServed(s)])) : asServed(v);
  }
  if (out.type === 'object' && out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

export interface KubevirtSchemas {
  path: string;
  /** The schema error of a KubeVirt object, null when valid; undefined for kinds not covered. */
  check(o: { apiVersion?: string; kind?: string }): string | null | undefined;
  kinds: string[];
}

let loaded: KubevirtSchemas | null | undefined;

/** KubeVirt's validators, or null where the swagger file is not on this machine. */
export function kubevirtSchemas(): KubevirtSchemas | null {
  if (loaded !== undefined) return loaded;
  const path = kubevirtSwaggerPath();
  if (!path) return (loaded = null);
  const swagger = JSON.parse(readFileSync(path, 'utf8')) as { source?: { commit?: string }; definitions: Record<string, unknown> };
  if (swagger.source && swagger.source.commit !== KUBEVIRT_SWAGGER_COMMIT) {
    throw new Error(`${path}: its definitions come from ${swagger.source.commit}, not ${KUBEVIRT_SWAGGER_COMMIT}`);
  }
  const definitions = Object.fromEntries(Object.entries(swagger.definitions).map(([name, d]) => [name, asServed(d, name)]));
  const ajv = openApiAjv({ float: true, double: true, byte: true });
  ajv.addSchema({ $id: 'kubevirt', definitions });
  const validators = new Map<string, ValidateFunction>();
  const validator = (key: string) => {
    let v = validators.get(key);
    if (!v) {
      v = ajv.compile({ $ref: `kubevirt#/definitions/${ROOTS[key]}` });
      validators.set(key, v);
    }
    return v;
  };
  loaded = {
    path,
    kinds: Object.keys(ROOTS),
    check(o) {
      const key = `${o.apiVersion}/${o.kind}`;
      if (!ROOTS[key]) return undefined;
      const validate = validator(key);
      if (validate(o)) return null;
      const e = validate.errors![0]!;
      const extra = e.keyword === 'additionalProperties' ? ` (${(e.params as { additionalProperty: string }).additionalProperty})` : '';
      return `${e.instancePath || '/'} ${e.message}${extra}`;
    },
  };
  return loaded;
}
