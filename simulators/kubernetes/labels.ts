/**
 * Kubernetes label selectors (`labelSelector=` query): equality-based (`a=b`, `a==b`,
 * `a!=b`) and set-based (`a in (x,y)`, `a notin (x)`, `a`, `!a`) requirements, ANDed.
 */
export type LabelRequirement =
  { key: string; op: 'eq' | 'neq'; value: string } | { key: string; op: 'in' | 'notin'; values: string[] } | { key: string; op: 'exists' | 'absent' };

export class SelectorError extends Error {}

/** Splits on commas that are not inside parentheses. */
function splitTop(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts.map((p) => p.trim()).filter((p) => p.length > 0);
}

export function parseLabelSelector(selector: string | null | undefined): LabelRequirement[] {
  if (!selector) return [];
  return splitTop(selector).map((part) => {
    let m = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part);
    if (m)
      return {
        key: m[1]!,
        op: m[2] as 'in' | 'notin',
        values: m[3]!
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean),
      };
    m = /^([\w./-]+)\s*(!=|==|=)\s*([\w.-]*)$/.exec(part);
    if (m) return { key: m[1]!, op: m[2] === '!=' ? 'neq' : 'eq', value: m[3]! };
    m = /^!\s*([\w./-]+)$/.exec(part);
    if (m) return { key: m[1]!, op: 'absent' };
    m = /^([\w./-]+)$/.exec(part);
    if (m) return { key: m[1]!, op: 'exists' };
    throw new SelectorError(`unable to parse requirement: ${JSON.stringify(part)}`);
  });
}

export function matchesLabels(labels: Record<string, string> | undefined, requirements: readonly LabelRequirement[]): boolean {
  const l = labels ?? {};
  return requirements.every((r) => {
    const has = Object.hasOwn(l, r.key);
    switch (r.op) {
      case 'eq':
        return has && l[r.key] === r.value;
      case 'neq':
        return !has || l[r.key] !== r.value;
      case 'in':
        return has && r.values.includes(l[r.key]!);
      case 'notin':
        return !has || !r.values.includes(l[r.key]!);
      case 'exists':
        return has;
      case 'absent':
        return !has;
    }
  });
}

/** A `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`); an empty or absent one matches everything (as a PDB's does). */
export function matchesLabelSelectorObject(
  labels: Record<string, string> | undefined,
  selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] } | undefined,
): boolean {
  const l = labels ?? {};
  if (!selector) return true;
  if (!Object.entries(selector.matchLabels ?? {}).every(([k, v]) => l[k] === v)) return false;
  return (selector.matchExpressions ?? []).every((e) => {
    const has = Object.hasOwn(l, e.key);
    if (e.operator === 'In') return has && (e.values ?? []).includes(l[e.key]!);
    if (e.operator === 'NotIn') return !has || !(e.values ?? []).includes(l[e.key]!);
    if (e.operator === 'Exists') return has;
    if (e.operator === 'DoesNotExist') return !has;
    return false;
  });
}
