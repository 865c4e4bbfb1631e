/**
 * Orders ids and names as people read them: numbers inside by value (node 3 before
 * node 10). One collator, built once: `localeCompare` with options builds a new one on
 * every comparison, which dominated the cost of listing 500 VMs.
 */
export const compareNatural: (a: string, b: string) => number = new Intl.Collator('en', { numeric: true }).compare;
