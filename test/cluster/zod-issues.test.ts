import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeIssues, issuePath } from '../../src/cluster/zod-issues.ts';

const schema = z.object({ nodes: z.array(z.object({ name: z.string() }).strict()), port: z.number() }).strict();
const errorOf = (value: unknown) => schema.safeParse(value).error!;

describe('zod issue formatting', () => {
  it('names paths with list indexes as brackets, or dots where a message has them so', () => {
    expect(issuePath(['plugins', 0, 'options'])).toBe('plugins[0].options');
    expect(issuePath(['nodes', 0, 'name'], { index: 'dot' })).toBe('nodes.0.name');
    expect(issuePath([])).toBe('(root)');
    expect(issuePath([], { root: 'body' })).toBe('body');
  });

  it('gives one line per problem and names each unknown key', () => {
    const error = errorOf({ nodes: [{ name: 1, extra: true }], port: 'x', other: 1 });
    const lines = describeIssues(error).split('\n');
    expect(lines).toContain('nodes[0].extra: unknown key');
    expect(lines).toContain('other: unknown key');
    expect(lines.map((line) => line.slice(0, line.indexOf(': '))).sort()).toEqual(['nodes[0].extra', 'nodes[0].name', 'other', 'port']);
  });

  it('keeps a one-line summary short', () => {
    const error = errorOf({ nodes: [{ name: 1 }, { name: 2 }, { name: 3 }], port: 'x' });
    const summary = describeIssues(error, { max: 2, separator: '; ', index: 'dot' });
    expect(summary.split('; ')).toHaveLength(2);
    expect(summary).toMatch(/^nodes\.0\.name: /);
  });
});
