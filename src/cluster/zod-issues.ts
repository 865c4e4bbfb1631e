/**
 * zod's problems as `key: problem`, the one wording for config files, plugin options,
 * plugin state files and request bodies.
 */
import type { z } from 'zod';

interface IssuePathStyle {
  /** What the whole value is called when the problem is at the top. */
  root?: string;
  /** A list index as `plugins[0]` or, as the plugins' state-file messages have it, `nodes.0`. */
  index?: 'bracket' | 'dot';
}

export function issuePath(path: readonly PropertyKey[], { root = '(root)', index = 'bracket' }: IssuePathStyle = {}): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number' && index === 'bracket') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || root;
}

/** One line per problem; an unknown key is named itself, not the object that holds it. */
export function issueLines(error: z.ZodError, style: IssuePathStyle = {}): string[] {
  return error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') {
      const base = issuePath(issue.path, { ...style, root: '' });
      return issue.keys.map((key) => `${base ? `${base}.${key}` : key}: unknown key`);
    }
    return [`${issuePath(issue.path, style)}: ${issue.message}`];
  });
}

interface IssueListing extends IssuePathStyle {
  /** At most this many lines: a message, not a report. */
  max?: number;
  separator?: string;
}

export function describeIssues(error: z.ZodError, { max = Number.POSITIVE_INFINITY, separator = '\n', ...style }: IssueListing = {}): string {
  return issueLines(error, style).slice(0, max).join(separator);
}
