import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import GithubSlugger from 'github-slugger';
import { PROJECT_ROOT } from './child-server.ts';

/** The repository's Markdown files (tracked or new, not ignored), by path from its root. */
export function markdownFiles(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], { cwd: PROJECT_ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f && !f.startsWith('node_modules/'));
}

export const readDoc = (path: string) => readFileSync(`${PROJECT_ROOT}${path}`, 'utf8');

export interface FencedBlock {
  /** The info string's first word (```graphql → graphql), '' when none. */
  lang: string;
  /** The rest of the info string (```graphql run=demo → run=demo). */
  meta: string;
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
}

/** The fenced code blocks of a Markdown text (``` or ~~~, indented ones in lists included), in order. */
export function fencedBlocks(text: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)(`{3,}|~{3,})\s*([^\s`]*)\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang, meta] = open as unknown as [string, string, string, string, string];
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !new RegExp(`^ *${fence[0]}{${fence.length},}\\s*$`).test(lines[j]!); j++)
      body.push(lines[j]!.slice(Math.min(indent.length, /^ */.exec(lines[j]!)![0].length)));
    blocks.push({ lang, meta: meta.trim(), body: body.join('\n'), line: i + 1 });
    i = j;
  }
  return blocks;
}

/** The text outside fenced blocks and inline code, where links are links. */
function prose(text: string, keepInlineCode = false): string {
  const lines = text.split('\n');
  let fence: string | null = null;
  return lines
    .map((line) => {
      const m = /^ *(`{3,}|~{3,})/.exec(line);
      if (fence) {
        if (m && m[1]![0] === fence[0] && m[1]!.length >= fence.length && /^ *[`~]+\s*$/.test(line)) fence = null;
        return '';
      }
      if (m) {
        fence = m[1]!;
        return '';
      }
      return keepInlineCode ? line : line.replace(/`[^`]*`/g, '``');
    })
    .join('\n');
}

/** Every `[text](target)` and `![alt](target)` outside code, with its line. */
export function links(text: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  prose(text)
    .split('\n')
    .forEach((line, i) => {
      for (const m of line.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push({ target: m[1]!, line: i + 1 });
    });
  return out;
}

/** The anchors GitHub gives a file's headings (github-slugger, duplicates numbered as GitHub does). */
export function anchors(text: string): Set<string> {
  const slugger = new GithubSlugger();
  const out = new Set<string>();
  for (const line of prose(text, true).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    // Heading text as rendered: link syntax and emphasis markers are not part of it.
    if (m) out.add(slugger.slug(m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[*_`]/g, '')));
  }
  return out;
}
