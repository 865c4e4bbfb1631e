import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generatedReferences, renderApiReference, renderConfigReference } from '../../scripts/docs-reference.ts';
import { PROJECT_ROOT } from '../support/child-server.ts';

/**
 * Issue 30, point 6: docs/reference/config.md is generated from the config schema and
 * docs/reference/api.md from schema.graphql (`npm run docs:reference`); a change to either
 * source without regenerating fails here.
 */
describe('the generated references (issue 30, point 6)', () => {
  it.each(Object.entries(generatedReferences()))('%s is what npm run docs:reference writes now', (path, generated) => {
    expect(readFileSync(`${PROJECT_ROOT}${path}`, 'utf8'), `${path} is stale: run npm run docs:reference`).toBe(generated);
  });

  it('the config reference lists every key with its default and meaning, nested ones dotted', () => {
    const text = renderConfigReference();
    expect(text).toContain(
      "| `operations.maxConcurrentMoves` | integer | `64` | ≥ 1, ≤ 10000 | Cut-overs in flight per operation (storage:D6; Neon's default). |",
    );
    expect(text).toContain('| `operations.podDrain.gracePeriodSeconds` | integer | `180` | ≥ -1 |');
    expect(text).toContain('| `plugins[].name` | string |  | required, matches `^[a-z][a-z0-9-]*$` |');
    expect(text).toContain('## `ha`');
  });

  it('the API reference follows schema.graphql: a field added there shows, with its arguments and description', () => {
    const sdl = readFileSync(`${PROJECT_ROOT}schema.graphql`, 'utf8').replace(
      /type Query \{/,
      'type Query {\n  """Added by the test."""\n  addedByTest(limit: Int = 3): [ClusterNode!]!',
    );
    const text = renderApiReference(sdl);
    expect(text).toContain('| `addedByTest`(limit: [Int](#int) = `3`) | [[ClusterNode](#clusternode)!]! | Added by the test. |');
    expect(text).not.toBe(renderApiReference(readFileSync(`${PROJECT_ROOT}schema.graphql`, 'utf8')));
  });

  it('npm run docs:reference -- --check exits 0 on the repository as committed', () => {
    expect(() =>
      execFileSync(process.execPath, ['--import', 'tsx', 'scripts/docs-reference.ts', '--check'], { cwd: PROJECT_ROOT, stdio: 'pipe' }),
    ).not.toThrow();
  });
});
