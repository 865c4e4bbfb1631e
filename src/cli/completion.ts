import { COMMON } from './common.ts';
import { CLIENT_VERBS } from './index.ts';
import type { FlagSpec } from './verb.ts';

/** What completion offers for one command: its sub-commands, its flags, and the values of its enum flags. */
interface Completable {
  name: string;
  subcommands: readonly string[];
  flags: Record<string, FlagSpec>;
}

/** The commands that run without a gateway (src/cli.ts), for completion. */
const LOCAL: Completable[] = [
  {
    name: 'serve',
    subcommands: [],
    flags: { 'reset-demo': { type: 'boolean', description: '' }, 'demo-slowdown': { type: 'string', description: '' }, help: COMMON.help! },
  },
  {
    name: 'simulator',
    subcommands: [],
    flags: {
      'config-out': { type: 'string', description: '' },
      nodes: { type: 'string', description: '' },
      'vms-per-node': { type: 'string', description: '' },
      tenants: { type: 'string', description: '' },
    },
  },
  { name: 'db', subcommands: ['copy'], flags: { from: { type: 'string', description: '' }, to: { type: 'string', description: '' } } },
  {
    name: 'token',
    subcommands: ['create', 'revoke', 'list'],
    flags: {
      scope: { type: 'string', description: '', values: ['viewer', 'operator', 'admin'] },
      name: { type: 'string', description: '' },
      'expires-in': { type: 'string', description: '' },
      json: COMMON.json!,
    },
  },
  { name: 'completion', subcommands: ['bash', 'zsh'], flags: {} },
  { name: 'help', subcommands: [], flags: {} },
];

function commands(): Completable[] {
  return [...LOCAL, ...CLIENT_VERBS.map((v) => ({ name: v.name, subcommands: v.subcommands ?? [], flags: { ...COMMON, ...v.options } }))];
}

const words = (xs: readonly string[]) => xs.join(' ');

/**
 * `lockkeeper completion bash|zsh` (issue 30, point 2): a static script, so a TAB costs no
 * node start. Completes the command, its sub-command, its flags and the values of enum flags.
 */
export function completionScript(shell: string): string | null {
  const all = commands();
  const names = words([...all.map((c) => c.name)].sort());
  const values = all.flatMap((c) =>
    Object.entries(c.flags)
      .filter(([, f]) => f.values)
      .map(([flag, f]) => ({ key: `${c.name}:--${flag}`, values: words(f.values!) })),
  );
  if (shell === 'bash')
    return `# lockkeeper completion for bash. Load it with: source <(lockkeeper completion bash)
_lockkeeper() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" cmd="\${COMP_WORDS[1]}" subs="" flags=""
  if [[ $COMP_CWORD -eq 1 ]]; then COMPREPLY=($(compgen -W "${names}" -- "$cur")); return; fi
  case "$cmd:$prev" in
${values.map((v) => `    ${v.key}) COMPREPLY=($(compgen -W "${v.values}" -- "$cur")); return;;`).join('\n')}
  esac
  case "$cmd" in
${all.map((c) => `    ${c.name}) subs="${words(c.subcommands)}"; flags="${words(Object.keys(c.flags).map((f) => `--${f}`))}";;`).join('\n')}
  esac
  if [[ $COMP_CWORD -eq 2 && "$cur" != -* && -n "$subs" ]]; then COMPREPLY=($(compgen -W "$subs" -- "$cur")); return; fi
  COMPREPLY=($(compgen -W "$flags" -- "$cur"))
}
complete -F _lockkeeper lockkeeper
`;
  if (shell === 'zsh')
    return `#compdef lockkeeper
# lockkeeper completion for zsh. Load it with: source <(lockkeeper completion zsh)
# (or save it as _lockkeeper in a directory of $fpath).
_lockkeeper() {
  local cmd="\${words[2]}" prev="\${words[CURRENT-1]}" subs="" flags=""
  if (( CURRENT == 2 )); then compadd -- ${names}; return; fi
  case "$cmd:$prev" in
${values.map((v) => `    ${v.key}) compadd -- ${v.values}; return;;`).join('\n')}
  esac
  case "$cmd" in
${all.map((c) => `    ${c.name}) subs="${words(c.subcommands)}"; flags="${words(Object.keys(c.flags).map((f) => `--${f}`))}";;`).join('\n')}
  esac
  if (( CURRENT == 3 )) && [[ "\${words[CURRENT]}" != -* && -n "$subs" ]]; then compadd -- \${=subs}; return; fi
  compadd -- \${=flags}
}
if (( $+functions[compdef] )); then compdef _lockkeeper lockkeeper; fi
`;
  return null;
}
