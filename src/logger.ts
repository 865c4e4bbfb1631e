import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * Readable, coloured lines when a person watches (stdout is a terminal), JSON lines for
 * machines otherwise (issue 30, point 5). `LOCKKEEPER_LOG_FORMAT=json|pretty` overrides.
 */
function wantsPretty(env: NodeJS.ProcessEnv): boolean {
  if (env.LOCKKEEPER_LOG_FORMAT === 'json') return false;
  if (env.LOCKKEEPER_LOG_FORMAT === 'pretty') return true;
  return process.stdout.isTTY === true;
}

/**
 * pino-pretty, loaded only when used (a gateway logging JSON never reads it), in this thread:
 * a worker transport would lose the last lines of a `process.exit`.
 */
function prettyStream(): DestinationStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as (options: object) => DestinationStream;
  return pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service', sync: true });
}

/** Structured logs; `LOCKKEEPER_LOG_LEVEL` sets the level (tests pass `silent`). */
export function createLogger(level = process.env.LOCKKEEPER_LOG_LEVEL ?? 'info', env: NodeJS.ProcessEnv = process.env): Logger {
  const options = { level, base: { service: 'lockkeeper' } };
  return level !== 'silent' && wantsPretty(env) ? pino(options, prettyStream()) : pino(options);
}
