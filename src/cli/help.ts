import { COMMON, EXIT_CODES } from './common.ts';
import type { FlagSpec, Verb } from './verb.ts';

/** `  --name VALUE   description (values: A, B)`, aligned. */
function flagLines(flags: Record<string, FlagSpec>): string {
  const heads = Object.entries(flags).map(([name, f]) => `--${name}${f.value ? ` ${f.value}` : ''}${f.short ? `, -${f.short}` : ''}${f.multiple ? ' …' : ''}`);
  const width = Math.max(...heads.map((h) => h.length));
  return Object.values(flags)
    .map((f, i) => `  ${heads[i]!.padEnd(width)}  ${f.description}${f.values ? ` (${f.values.join(', ')}; any case)` : ''}`)
    .join('\n');
}

/** `lockkeeper <verb> --help`: synopsis, its flags, the common flags, examples and exit codes (issue 30, point 2). */
export function verbHelp(verb: Verb): string {
  const own = verb.options && Object.keys(verb.options).length ? `\nflags:\n${flagLines(verb.options)}\n` : '';
  return `usage:\n${verb.usage
    .split('\n')
    .map((l) => `  lockkeeper ${l.trim()}`)
    .join('\n')}
${own}
common flags:
${flagLines(COMMON)}

examples:
${verb.examples.map((e) => `  ${e}`).join('\n')}

${EXIT_CODES}
`;
}
