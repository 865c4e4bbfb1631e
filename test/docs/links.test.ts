import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/child-server.ts';
import { anchors, links, markdownFiles, readDoc } from '../support/markdown.ts';

/**
 * Issue 30, point 6: every relative link between the repository's Markdown files (README.md,
 * docs/, the generated docs/reference/, each plugin's and tool's README) resolves — the file
 * exists, and an `#anchor` is a heading of it as GitHub slugs headings (github-slugger).
 * Absolute URLs (http:, mailto:) are not fetched.
 */

/** Each broken link as `file:line: target (why)`. */
function brokenLinks(files: string[], read: (path: string) => string, exists: (path: string) => boolean): string[] {
  const broken: string[] = [];
  const headings = new Map<string, Set<string>>();
  const anchorsOf = (path: string) => headings.get(path) ?? headings.set(path, anchors(read(path))).get(path)!;
  for (const file of files) {
    for (const { target, line } of links(read(file))) {
      if (/^[a-z][a-z+.-]*:/i.test(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const resolved = path ? normalize(join(dirname(file), decodeURIComponent(path))).replace(/\/$/, '') : file;
      if (resolved.startsWith('..')) broken.push(`${file}:${line}: ${target} (outside the repository)`);
      else if (!exists(resolved)) broken.push(`${file}:${line}: ${target} (no such file)`);
      else if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor))
        broken.push(`${file}:${line}: ${target} (no heading #${anchor} in ${resolved})`);
    }
  }
  return broken;
}

const onDisk = (path: string) =>
  existsSync(join(PROJECT_ROOT, path)) && (statSync(join(PROJECT_ROOT, path)).isFile() || statSync(join(PROJECT_ROOT, path)).isDirectory());

describe('links between the Markdown files (issue 30, point 6)', () => {
  it('the docs link to each other: README, every docs/ page and the generated references', () => {
    const files = markdownFiles();
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/operations.md', 'docs/reference/config.md', 'docs/reference/api.md']));
    expect(links(readDoc('README.md')).length).toBeGreaterThan(10);
  });

  it('every relative link resolves to a file, and every #anchor to a heading of it', () => {
    expect(brokenLinks(markdownFiles(), readDoc, onDisk)).toEqual([]);
  });

  it('finds a missing file, a missing anchor and a link outside the repository (the check checks)', () => {
    const docs: Record<string, string> = {
      'a.md':
        '# Title\n\n## Safe to restart\n\nSee [b](docs/b.md#nope), [x](missing.md), [up](../../etc/passwd), [ok](#safe-to-restart) and `[code](nowhere.md)`.\n',
      'docs/b.md': '# B\n\n## `server` (PostgreSQL)\n\n[back](../a.md#title) [here](#server-postgresql)\n\n```md\n[fenced](nowhere.md)\n```\n',
    };
    expect(
      brokenLinks(
        Object.keys(docs),
        (p) => docs[p]!,
        (p) => p in docs,
      ),
    ).toEqual([
      'a.md:5: docs/b.md#nope (no heading #nope in docs/b.md)',
      'a.md:5: missing.md (no such file)',
      'a.md:5: ../../etc/passwd (outside the repository)',
    ]);
  });
});
