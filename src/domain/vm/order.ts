/** vm:M2: VMs are handled in a stable order, namespace then name, read as people read them. */
import { compareNatural } from '../compare.ts';

export function byNamespaceName(a: { namespace: string; name: string }, b: { namespace: string; name: string }): number {
  return compareNatural(a.namespace, b.namespace) || compareNatural(a.name, b.name);
}
