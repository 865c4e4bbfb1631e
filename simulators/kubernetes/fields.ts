/** Field selectors (`fieldSelector=spec.nodeName=n1,status.phase!=Succeeded`), strict about which fields a kind supports. */
import { SelectorError } from './labels.ts';
import type { K8sObject, ResourceDef } from './store.ts';

export interface FieldRequirement {
  field: string;
  op: 'eq' | 'neq';
  value: string;
}

const ALWAYS = ['metadata.name', 'metadata.namespace'];

export function parseFieldSelector(selector: string | null, resource: ResourceDef): FieldRequirement[] {
  if (!selector) return [];
  const allowed = [...ALWAYS, ...(resource.fieldSelectors ?? [])];
  return selector
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((part) => {
      const m = /^([\w.]+)\s*(!=|==|=)\s*(.*)$/.exec(part);
      if (!m) throw new SelectorError(`invalid field selector: ${JSON.stringify(part)}`);
      const field = m[1]!;
      if (!allowed.includes(field)) throw new SelectorError(`field label not supported: ${field}`);
      return { field, op: m[2] === '!=' ? 'neq' : 'eq', value: m[3]! };
    });
}

function valueAt(o: K8sObject, path: string): string {
  let node: unknown = o;
  for (const key of path.split('.')) node = node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
  return node === undefined || node === null ? '' : String(node);
}

export function matchesFields(o: K8sObject, requirements: readonly FieldRequirement[]): boolean {
  return requirements.every((r) => (valueAt(o, r.field) === r.value) === (r.op === 'eq'));
}
