import { readFileSync } from 'node:fs';
import {
  getNamedType,
  isObjectType,
  isUnionType,
  Kind,
  parse,
  validate,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import { demoTopology, shardIdOf } from '../../plugins/fake/index.ts';
import { parseConfig } from '../../src/config/load.ts';
import { loadPlugin } from '../../src/config/plugin-registry.ts';
import { buildSchema } from '../../src/graphql/schema.ts';
import { fencedBlocks, markdownFiles, readDoc } from '../support/markdown.ts';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
/** The README and the docs/ pages (not the generated references): every example a reader may paste. */
const PAGES = markdownFiles().filter((f) => f === 'README.md' || (f.startsWith('docs/') && !f.startsWith('docs/reference/')));
const DOCS = PAGES.map(readDoc).join('\n');
const pageBlocks = PAGES.flatMap((page) => fencedBlocks(readDoc(page)).map((b) => ({ ...b, page })));
const blocks = pageBlocks.filter((b) => b.lang === 'graphql').map((b) => b.body);

describe('GraphQL examples of the README and docs/', () => {
  it('are there', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(20);
  });

  // A block may show several operations one after another; each is checked on its own.
  it.each(blocks.map((b, i) => [i, b] as const))('example %i is valid against the schema', (_, source) => {
    const schema = buildSchema({ simulation: true });
    for (const definition of parse(source).definitions) {
      const errors = validate(schema, { kind: Kind.DOCUMENT, definitions: [definition] });
      expect(errors.map((e) => e.message)).toEqual([]);
    }
  });
});

/**
 * Every field a README mutation calls whose result is a union with typed errors selects them:
 * `... on Error { … }` or each error type of the union. Otherwise a refusal comes back as `{}`.
 */
function mutationsWithoutErrors(schema: GraphQLSchema, operation: OperationDefinitionNode): string[] {
  const missing: string[] = [];
  const visit = (parent: GraphQLObjectType, selections: SelectionSetNode, path: string) => {
    for (const selection of selections.selections) {
      if (selection.kind !== Kind.FIELD) continue;
      const field = parent.getFields()[selection.name.value];
      if (!field || !selection.selectionSet) continue;
      const type = getNamedType(field.type);
      const where = `${path}${selection.name.value}`;
      if (isUnionType(type)) {
        const errors = type.getTypes().filter((member) => member.getInterfaces().some((i) => i.name === 'Error'));
        const selected = new Set(
          selection.selectionSet.selections.flatMap((s) => (s.kind === Kind.INLINE_FRAGMENT && s.typeCondition ? [s.typeCondition.name.value] : [])),
        );
        if (errors.length && !selected.has('Error') && !errors.every((e) => selected.has(e.name))) missing.push(where);
      } else if (isObjectType(type)) visit(type, selection.selectionSet, `${where}.`);
    }
  };
  visit(schema.getMutationType()!, operation.selectionSet, '');
  return missing;
}

describe('mutation examples of the README and docs/', () => {
  const schema = buildSchema({ simulation: true });
  const mutations = blocks
    .flatMap((b) => parse(b).definitions)
    .filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && d.operation === 'mutation');

  it('are there', () => {
    expect(mutations.length).toBeGreaterThanOrEqual(6);
  });

  it.each(mutations.map((m, i) => [i, m] as const))('mutation %i selects its error types', (_, operation) => {
    expect(mutationsWithoutErrors(schema, operation)).toEqual([]);
  });
});

describe('README demo cluster table', () => {
  it('lists each node’s VMs and the trap shards as the demo topology has them', () => {
    const section = README.slice(README.indexOf('## The demo cluster'), README.indexOf('## GraphiQL'));
    const rows = [...section.matchAll(/^\| (\d) \| (zone-[ab]) \| [^|]+ \| ([^|]+) \| ([^|]+) \|$/gm)];
    expect(rows.map((r) => r[1])).toEqual(['1', '2', '3', '4']);
    const topology = demoTopology();
    let traps = 0;
    for (const [, node, zone, vms, trapText] of rows) {
      expect(topology.nodes!.find((n) => n.id === node)?.zone).toBe(zone);
      const listed = [...vms!.matchAll(/`([\w-]+\/[\w-]+)`/g)].map((m) => m[1]).sort();
      const actual = topology
        .vms!.filter((v) => v.nodeId === node)
        .map((v) => `${v.namespace}/${v.name}`)
        .sort();
      expect(listed, `node ${node}`).toEqual(actual);
      for (const [, prefix, suffix] of trapText!.matchAll(/`([0-9a-f]{8})…-(\d{4})`/g)) {
        const shard = topology.shards!.find(
          (x) =>
            x.tenantId.startsWith(prefix!) &&
            shardIdOf({ tenantId: x.tenantId, shardNumber: x.shardNumber ?? 0, shardCount: x.shardCount ?? 0 }).endsWith(`-${suffix}`),
        );
        expect(shard?.attachedNodeId, `shard ${prefix}…-${suffix}`).toBe(node);
        traps++;
      }
    }
    expect(traps).toBe(4);
  });
});

describe('token examples of the docs', () => {
  it('create tokens of distinct names, so following the CLI and the GraphQL example both works (names are unique forever)', () => {
    const cli = [...DOCS.matchAll(/lockkeeper token create [^\n]*--name ([\w-]+)/g)].map((m) => m[1]!);
    const graphql = [...DOCS.matchAll(/createToken\(name: "([\w-]+)"/g)].map((m) => m[1]!);
    expect(cli.length).toBeGreaterThan(0);
    expect(graphql.length).toBeGreaterThan(0);
    const all = [...cli, ...graphql];
    expect(new Set(all).size).toBe(all.length);
  });
});

describe('config examples of the docs', () => {
  const configs = pageBlocks.filter((b) => b.lang === 'json' && b.body.includes('"plugins"')).map((b) => b.body);

  it('are there', () => {
    expect(configs.length).toBeGreaterThanOrEqual(4);
  });

  it.each(configs.map((b, i) => [i, b] as const))('config example %i is accepted, plugin options included', async (_, source) => {
    const config = parseConfig(JSON.parse(source), 'docs');
    for (const entry of config.plugins) {
      const plugin = await loadPlugin(entry.name, 'docs');
      const parsed = plugin.optionsSchema.safeParse(entry.options);
      expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
    }
  });
});
