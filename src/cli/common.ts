import type { FlagSpec } from './verb.ts';

export const DEFAULT_SERVER = 'http://127.0.0.1:4000/graphql';

/** The flags every client verb takes. */
export const COMMON: Record<string, FlagSpec> = {
  server: { type: 'string', value: 'URL', description: `the gateway's GraphQL endpoint (LOCKKEEPER_URL, default ${DEFAULT_SERVER})` },
  token: { type: 'string', value: 'TOKEN', description: 'an API token (LOCKKEEPER_TOKEN)' },
  json: { type: 'boolean', description: 'machine-readable: every answer, refusal and error is JSON on stdout' },
  reason: { type: 'string', value: 'R', description: 'why: recorded with the operation and in the audit log' },
  help: { type: 'boolean', short: 'h', description: 'this help' },
};

export const EXIT_CODES = `exit codes:   0 done, 1 the operation ended FAILED or CANCELLED, 2 refused or bad usage,
                3 gateway unreachable or not allowed, 4 a watched rollout is PAUSED,
                5 a watched drain or maintenance SUCCEEDED but left workloads on its node (not safe to restart)`;
