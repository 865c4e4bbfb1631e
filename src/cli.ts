import { parseArgs } from 'node:util';
import { runTokenCommand, TOKEN_USAGE } from './auth/cli-tokens.ts';
import { ConfigError } from './config/errors.ts';
import { DEFAULT_CONFIG } from './config/defaults.ts';
import { createLogger } from './logger.ts';
import { startLockkeeper } from './start.ts';
import { DEFAULT_DATABASE_URL } from './store/database.ts';

const { port: DEFAULT_PORT, host: DEFAULT_HOST } = DEFAULT_CONFIG.server;

/** The usage text; the client verbs' part is loaded only when it is shown. */
const usage = (CLIENT_USAGE: string) => `usage: lockkeeper <command>

commands:
  serve     run the gateway (GraphQL, GraphiQL, WebSocket subscriptions) on LOCKKEEPER_PORT (default ${DEFAULT_PORT})
            --reset-demo   the demo starts over: deletes the demo's database and cluster state first
                           (refused unless every configured plugin is a demo)
  simulator [--config-out FILE] [--nodes N] [--vms-per-node N] [--tenants N] [--hyperconverged]
            run the simulated cluster (Kubernetes + KubeVirt API, pageservers) as its own process
            and write a gateway config for the real plugins: LOCKKEEPER_CONFIG=FILE lockkeeper serve
  db copy --from URL --to URL
            copy every table of an installation into an empty database (e.g. SQLite to PostgreSQL)
  token     create, revoke and list API tokens in the database (no server needed):

${TOKEN_USAGE.replace(/^usage:\n/, '').replace(/^/gm, '  ')}

${CLIENT_USAGE}

environment:
  LOCKKEEPER_CONFIG        config file (default ./lockkeeper.config.json, else the simulated demo cluster)
  LOCKKEEPER_DATABASE_URL  file:<path> (SQLite, default ${DEFAULT_DATABASE_URL}) or postgresql://… (several replicas)
  LOCKKEEPER_PORT          HTTP port (default ${DEFAULT_PORT})
  LOCKKEEPER_HOST          address to bind (default ${DEFAULT_HOST})
  LOCKKEEPER_LOG_LEVEL     pino level (default info)
  LOCKKEEPER_ADMIN_TOKEN   a bootstrap admin token (24+ characters); turns authentication on
  LOCKKEEPER_INSECURE      1: allow a non-loopback address without authentication`;

async function serve(resetDemo: boolean): Promise<void> {
  const log = createLogger();
  let started;
  try {
    started = await startLockkeeper({ log, resetDemo });
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
  const entry = new URL('../simulators/main.ts', import.meta.url);
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

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: false,
    options: { help: { type: 'boolean', short: 'h' }, 'reset-demo': { type: 'boolean' } },
  });
  const command = positionals[0];
  switch (command) {
    case 'serve':
      if (!values.help) return serve(values['reset-demo'] === true);
      break;
    case 'token':
      return token(argv.slice(argv.indexOf('token') + 1));
    case 'db':
      return db(argv.slice(argv.indexOf('db') + 1));
    case 'simulator':
      return simulator(argv.slice(argv.indexOf('simulator') + 1));
    default:
      break;
  }
  const { CLIENT_USAGE, isClientVerb } = await clientVerbs();
  if (command && isClientVerb(command)) return client(command, argv.slice(argv.indexOf(command) + 1));
  if (values.help || !command || command === 'serve') {
    process.stdout.write(`${usage(CLIENT_USAGE)}\n`);
    return;
  }
  process.stderr.write(`lockkeeper: unknown command "${command}"\n${usage(CLIENT_USAGE)}\n`);
  process.exit(2);
}

await main(process.argv.slice(2));
