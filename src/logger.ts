import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs; `LOCKKEEPER_LOG_LEVEL` sets the level (tests pass `silent`). */
export function createLogger(level = process.env.LOCKKEEPER_LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: { service: 'lockkeeper' } });
}
