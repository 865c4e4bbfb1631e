// The `lockkeeper` command line. Only constants are imported up front: each command loads
// what it needs when it runs, so `--help` and the client verbs never load the gateway, the
// database or the config schema (issue 30, point 2: answers within 0.3 s of a bare node).
import { parseArgs } from 'node:util';
import { TOKEN_USAGE } from './auth/token-usage.ts';
import { DEFAULT_DATABASE_URL, DEFAULT_HOST, DEFAULT_PORT } from './config/server-defaults.ts';

/** The usage text; the client verbs' part is loaded only when it is shown. */
const usage = (CLIENT_USAGE: string) => `usage: lockkeeper <command>

commands:
  serve     run the gateway (GraphQL, GraphiQL, WebSocket subscriptions) on LOCKKEEPER_PORT (default ${DEFAULT_PORT})
            --reset-demo   the demo starts over: deletes the demo's database and cluster state first
                           (refused unless every configured plugin is a demo)
            --demo-slowdown N   the simulated cluster's latencies × N (1–1000; LOCKKEEPER_DEMO_SLOWDOWN),
                           so that a person can watch a drain or maintenance progress
  simulator [--config-out FILE] [--nodes N] [--tenants N] [--separate-hosts] …   (lockkeeper simulator --help: every option)
            run the simulated cluster (Kubernetes + KubeVirt API, pageservers) as its own process
            and write a gateway config for the real plugins: LOCKKEEPER_CONFIG=FILE lockkeeper serve
  db copy --from URL --to URL
            copy every table of an installation into an empty database (e.g. SQLite to PostgreSQL)
  completion bash|zsh
            print a shell completion script: source <(lockkeeper completion bash)
  token     create, revoke and list API tokens in the database (no server needed):

${TOKEN_USAGE.replace(/^usage:\n/, '').replace(/^/gm, '  ')}

${CLIENT_USAGE}

environment:
  LOCKKEEPER_CONFIG        config file (default ./lockkeeper.config.json, else the simulated demo cluster)
  LOCKKEEPER_DATABASE_URL  file:<path> (SQLite, default ${DEFAULT_DATABASE_URL}) or postgresql://… (several replicas)
  LOCKKEEPER_PORT          HTTP port (default ${DEFAULT_PORT})
  LOCKKEEPER_HOST          address to bind (default ${DEFAULT_HOST})
  LOCKKEEPER_LOG_LEVEL     pino level (default info)
  LOCKKEEPER_LOG_FORMAT    pretty (default on a terminal) or json (default otherwise)
  LOCKKEEPER_ADMIN_TOKEN   a bootstrap admin token (24+ characters); turns authentication on
  LOCKKEEPER_INSECURE      1: allow a non-loopback address without authentication`;

async function serve(resetDemo: boolean, demoSlowdown: string | undefined): Promise<void> {
  const [{ createLogger }, { startLockkeeper }, { ConfigError }] = await Promise.all([
    import('./logger.ts'),
    import('./start.ts'),
    import('./config/errors.ts'),
  ]);
  const log = createLogger();
  let started;
  try {
    started = await startLockkeeper({ log, resetDemo, ...(demoSlowdown !== undefined && { demoSlowdown: Number(demoSlowdown) }) });
  } catch (e) {
    // Start-up problems are the operator's to fix: say what and where, no stack trace.
    const message = e instanceof Error ? e.message : String(e);
    log.fatal({ err: e instanceof ConfigError ? undefined : e }, `start-up failed: ${message}`);
    process.stderr.write(`lockkeeper: start-up failed: ${message}\n`);
    process.exit(1);
  }
  const shutdown = (signal: string) => {
    log.info({ signal }, 'shutting down');
    started.app.stop().then(
      () => process.exit(0),
      (e: unknown) => {
        log.error({ err: e }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

async function token(args: string[]): Promise<void> {
  const { runTokenCommand } = await import('./auth/cli-tokens.ts');
  let code: number;
  try {
    code = await runTokenCommand(args, {
      env: process.env,
      cwd: process.cwd(),
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
    });
  } catch (e) {
    process.stderr.write(`lockkeeper token: ${e instanceof Error ? e.message : String(e)}\n`);
    code = 1;
  }
  process.exitCode = code;
}

async function db(args: string[]): Promise<void> {
  const { positionals, values } = parseArgs({ args, allowPositionals: true, strict: true, options: { from: { type: 'string' }, to: { type: 'string' } } });
  if (positionals[0] !== 'copy' || positionals.length !== 1 || !values.from || !values.to) {
    process.stderr.write('usage: lockkeeper db copy --from URL --to URL\n');
    process.exitCode = 2;
    return;
  }
  const { copyDatabase } = await import('./store/copy-database.ts');
  try {
    const result = await copyDatabase(values.from, values.to);
    const rows = Object.entries(result.rows)
      .map(([table, n]) => `${table} ${n}`)
      .join(', ');
    process.stdout.write(`copied ${result.from} to ${result.to}: ${rows}\n`);
  } catch (e) {
    process.stderr.write(`lockkeeper db copy: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  }
}

/**
 * ha:B1: the simulated cluster in a process of its own. Loaded by URL, like a plugin: the
 * gateway's code never depends on the simulators.
 */
async function simulator(args: string[]): Promise<void> {
  // From src/cli.ts (tsx) the simulators are a folder up; from the compiled dist/src/cli.js,
  // two. They stay TypeScript: the compiled CLI registers tsx's loader to read them.
  const compiled = import.meta.url.endsWith('.js');
  const entry = new URL(compiled ? '../../simulators/main.ts' : '../simulators/main.ts', import.meta.url);
  if (compiled) (await import('tsx/esm/api')).register();
  const { runSimulatorCommand } = (await import(entry.href)) as { runSimulatorCommand(argv: string[]): Promise<void> };
  try {
    await runSimulatorCommand(args);
  } catch (e) {
    process.stderr.write(`lockkeeper simulator: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
}

/** The client verbs load their modules (graphql-ws, cli-progress) only when used: `serve` starts without them. */
const clientVerbs = () => import('./cli/index.ts');

async function client(command: string, args: string[]): Promise<void> {
  const { runClientVerb } = await clientVerbs();
  // `lockkeeper events --follow | head`: the reader went away, which is no error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
  process.exitCode = await runClientVerb(command, args, {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    isTTY: process.stdout.isTTY === true,
    stream: process.stdout,
    env: process.env,
    now: () => Date.now(),
  });
}

/** The commands that run without a gateway (the client verbs come from src/cli/index.ts). */
const LOCAL_COMMANDS = ['serve', 'token', 'db', 'simulator', 'completion', 'help'];

/** Writes an unknown command's one line (with the nearest known command), or its JSON. */
async function unknownCommand(command: string, asJson: boolean): Promise<void> {
  const [levenshtein, { CLIENT_VERBS }] = await Promise.all([import('fastest-levenshtein'), clientVerbs()]);
  // A CommonJS package: bundled, its functions are on the default export.
  const { closest, distance } = ('default' in levenshtein ? levenshtein.default : levenshtein) as typeof levenshtein;
  const known = [...LOCAL_COMMANDS, ...CLIENT_VERBS.map((v) => v.name)];
  const nearest = closest(command, known);
  // A suggestion only when it is plausibly a typo (at most a third of the word differs).
  const suggestion = distance(command, nearest) <= Math.max(2, Math.ceil(command.length / 3)) ? nearest : null;
  const message = `unknown command "${command}"${suggestion ? `; did you mean "${suggestion}"?` : ''} (lockkeeper --help lists the commands)`;
  if (asJson) process.stdout.write(`${JSON.stringify({ error: { code: 'UNKNOWN_COMMAND', message, exitCode: 2, suggestion } }, null, 2)}\n`);
  else process.stderr.write(`lockkeeper: ${message}\n`);
  process.exitCode = 2;
}

async function completion(args: string[]): Promise<void> {
  const { completionScript } = await import('./cli/completion.ts');
  const script = completionScript(args[0] ?? '');
  if (script === null) {
    process.stderr.write(`lockkeeper completion: which shell? bash or zsh (e.g. source <(lockkeeper completion bash))\n`);
    process.exitCode = 2;
    return;
  }
  process.stdout.write(script);
}

async function help(topic: string | undefined): Promise<void> {
  const { CLIENT_USAGE, findClientVerb } = await clientVerbs();
  const verb = topic === undefined ? undefined : findClientVerb(topic);
  if (verb) {
    const { verbHelp } = await import('./cli/help.ts');
    process.stdout.write(verbHelp(verb));
    return;
  }
  process.stdout.write(`${usage(CLIENT_USAGE)}\n`);
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: false,
    options: { help: { type: 'boolean', short: 'h' }, 'reset-demo': { type: 'boolean' }, 'demo-slowdown': { type: 'string' } },
  });
  const command = positionals[0];
  const rest = () => argv.slice(argv.indexOf(command!) + 1);
  switch (command) {
    case 'serve':
      return values.help ? help(undefined) : serve(values['reset-demo'] === true, values['demo-slowdown'] as string | undefined);
    case 'token':
      return token(rest());
    case 'db':
      return db(rest());
    case 'simulator':
      return simulator(rest());
    case 'completion':
      return completion(rest());
    case 'help':
      return help(positionals[1]);
    case undefined:
      return help(undefined);
    default:
      break;
  }
  const { findClientVerb } = await clientVerbs();
  if (findClientVerb(command)) return client(command, rest());
  return unknownCommand(command, values.json === true);
}

await main(process.argv.slice(2));
