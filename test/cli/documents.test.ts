import { readFileSync } from 'node:fs';
import { buildSchema, GraphQLEnumType, parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { CLIENT_VERBS, MUTATIONS_WITHOUT_VERB } from '../../src/cli/index.ts';
import { DOCUMENTS } from '../../src/cli/documents.ts';
import { ENUMS, VM_STRATEGY_LABELS } from '../../src/cli/enums.ts';
import { SCHEMA_FILE } from '../../src/graphql/print.ts';
import { WEB_DOCUMENTS } from '../../src/web/documents.ts';

const schema = buildSchema(readFileSync(SCHEMA_FILE, 'utf8'));

describe('the CLI and schema.graphql', () => {
  it.each([...Object.entries(DOCUMENTS), ...Object.entries(WEB_DOCUMENTS).map(([k, d]) => [`dashboard ${k}`, d] as const)])(
    'rollout:T6 document %s is valid against schema.graphql',
    (_, document) => {
      expect(validate(schema, parse(document)).map((e) => e.message)).toEqual([]);
    },
  );

  it('rollout:T2 every mutation of the schema has a verb (or a stated reason why not), and every verb sends real mutations', () => {
    const mutations = Object.keys(schema.getMutationType()!.getFields());
    const covered = new Set(CLIENT_VERBS.flatMap((v) => v.mutations ?? []));
    const missing = mutations.filter((m) => !covered.has(m) && !(m in MUTATIONS_WITHOUT_VERB));
    expect(missing, 'mutations without a lockkeeper verb').toEqual([]);
    expect([...covered].filter((m) => !mutations.includes(m))).toEqual([]);
    // A verb's declared mutation is one its documents send.
    const sent = new Set(Object.values(DOCUMENTS).flatMap((d) => [...d.matchAll(/(?:result: )?(\w+)\(/g)].map((m) => m[1])));
    for (const m of covered) expect(sent.has(m), m).toBe(true);
  });

  it('issue 30 point 2: the enum values the CLI takes (and lists when it refuses one) are the schema’s', () => {
    for (const [name, values] of Object.entries(ENUMS)) {
      const type = schema.getType(name);
      expect(type, name).toBeInstanceOf(GraphQLEnumType);
      expect([...values].sort(), name).toEqual(
        (type as GraphQLEnumType)
          .getValues()
          .map((v) => v.name)
          .sort(),
      );
    }
    // Each strategy label, as the MaintenanceStrategy enum spells it (what `lockkeeper vms` prints).
    const printed = (schema.getType('MaintenanceStrategy') as GraphQLEnumType).getValues().map((v) => v.name);
    expect(VM_STRATEGY_LABELS.map((l) => l.replace(/(?<=.)([A-Z])/g, '_$1').toUpperCase()).sort()).toEqual(printed.sort());
  });
});
