import { readFileSync } from 'node:fs';
import { Kind, parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { loadPlugin } from '../../src/config/plugin-registry.ts';
import { buildSchema } from '../../src/graphql/schema.ts';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const blocks = [...README.matchAll(/```graphql\n([\s\S]*?)```/g)].map((m) => m[1]!);

describe('README GraphQL examples', () => {
  it('are there', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(6);
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

describe('README config examples', () => {
  const configs = [...README.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => b.includes('"plugins"'));

  it.each(configs.map((b, i) => [i, b] as const))('config example %i is accepted, plugin options included', async (_, source) => {
    const config = parseConfig(JSON.parse(source), 'README.md');
    for (const entry of config.plugins) {
      const plugin = await loadPlugin(entry.name, 'README.md');
      const parsed = plugin.optionsSchema.safeParse(entry.options);
      expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
    }
  });
});
