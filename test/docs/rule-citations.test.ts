import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * Every rule the repository cites resolves inside it: a citation is `<spec>:<id>` (ids repeat
 * across specs, so a bare id is ambiguous and refused) and each one has an entry in
 * docs/rules.md. Ranges (`vm:M2–M4`) and lists (`vm:D1/T5`) cite every id they span.
 */
const root = new URL('../../', import.meta.url);
const PREFIXES = ['vm', 'storage', 'neon', 'k8s', 'ha', 'rollout'];
const ID = String.raw`(?:[A-Z]{1,2}\d{1,2}|scenario-\d+)`;
const CITATION = new RegExp(String.raw`\b(${PREFIXES.join('|')}):(${ID})((?:\s?[–/-]\s?${ID})*)`, 'g');
const BARE = /(?<![\w:./#-])[A-Z]{1,2}\d{1,2}(?![\w])/g;

function documentedIds(): Set<string> {
  const rules = readFileSync(new URL('docs/rules.md', root), 'utf8');
  return new Set([...rules.matchAll(/^- \*\*([a-z0-9]+:[\w-]+)\*\* — /gm)].map((m) => m[1]!));
}

function citingFiles(): string[] {
  const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' }).split('\n');
  return listed.filter(
    (f) =>
      /^(src|plugins|simulators|test|bench|scripts|examples|bin|prisma|deploy|docs)\/|^README\.md$/.test(f) &&
      /\.(ts|mjs|js|md|prisma|yaml)$/.test(f) &&
      f !== 'docs/rules.md' &&
      !f.startsWith('src/store/generated/'),
  );
}

/** Expands a range (same letters, first to last) into every id it spans; a `/` list into each id. */
function expand(prefix: string, first: string, tail: string): string[] {
  const ids = [`${prefix}:${first}`];
  let previous = first;
  for (const m of tail.matchAll(new RegExp(String.raw`\s?([–/-])\s?(${ID})`, 'g'))) {
    const [, sep, id] = m as unknown as [string, string, string];
    const a = /^([A-Za-z-]+?)(\d+)$/.exec(previous);
    const b = /^([A-Za-z-]+?)(\d+)$/.exec(id);
    if (sep !== '/' && a && b && a[1] === b[1]) for (let n = Number(a[2]) + 1; n < Number(b[2]); n++) ids.push(`${prefix}:${a[1]}${n}`);
    ids.push(`${prefix}:${id}`);
    previous = id;
  }
  return ids;
}

describe('rule citations (docs/rules.md)', () => {
  const documented = documentedIds();
  const files = citingFiles();

  it('docs/rules.md lists the rules of all six specs', () => {
    for (const prefix of PREFIXES) expect([...documented].filter((id) => id.startsWith(`${prefix}:`)).length, prefix).toBeGreaterThan(5);
  });

  it('every cited <spec>:<id> has an entry in docs/rules.md', () => {
    const unknown: string[] = [];
    for (const file of files) {
      const text = readFileSync(new URL(file, root), 'utf8');
      for (const m of text.matchAll(CITATION)) {
        for (const id of expand(m[1]!, m[2]!, m[3] ?? '')) if (!documented.has(id)) unknown.push(`${file}: ${id}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it('every neon:* rule is cited by a test under test/ (issue 11: every numbered rule gets a test)', () => {
    const cited = new Set<string>();
    for (const file of files.filter((f) => f.startsWith('test/') && f !== 'test/docs/rule-citations.test.ts')) {
      const text = readFileSync(new URL(file, root), 'utf8');
      for (const m of text.matchAll(CITATION)) for (const id of expand(m[1]!, m[2]!, m[3] ?? '')) cited.add(id);
    }
    const neon = [...documented].filter((id) => id.startsWith('neon:') && !id.startsWith('neon:scenario-'));
    expect(neon.length).toBeGreaterThan(40);
    expect(neon.filter((id) => !cited.has(id))).toEqual([]);
  });

  it('no rule is cited by its bare id (ids repeat across specs)', () => {
    const bare: string[] = [];
    for (const file of files) {
      const text = readFileSync(new URL(file, root), 'utf8').replace(CITATION, '');
      text.split('\n').forEach((line, i) => {
        for (const m of line.matchAll(BARE)) bare.push(`${file}:${i + 1}: ${m[0]} in "${line.trim().slice(0, 100)}"`);
      });
    }
    expect(bare).toEqual([]);
  });
});
