/**
 * Readiness (ha:DB6, issue 27), apart from liveness (/healthz): whether this replica should get
 * traffic. 503 while it starts (operations resuming) or shuts down; 200 once serving, also
 * while the database is unavailable — the body then says `database: down` — because every
 * replica shares the database, and failing all their readiness at once would empty the
 * Service and hide the typed UNAVAILABLE answers clients can act on (docs/runbook.md).
 */
import { Gauge, type Registry } from 'prom-client';
import type { DatabaseState } from '../store/database-availability.ts';
import type { Guard } from './router.ts';

type Phase = 'starting' | 'serving' | 'stopping';

export const READY_PATH = '/readyz';
/** Seconds a client refused while the replica starts or stops should wait. */
const PHASE_RETRY_AFTER_S = 2;

export interface Readiness {
  phase: Phase;
  database: () => DatabaseState;
}

/** The body and status of /readyz. */
export function readinessAnswer(r: Readiness): { status: number; body: Record<string, unknown> } {
  const ready = r.phase === 'serving';
  return { status: ready ? 200 : 503, body: { status: ready ? 'ready' : r.phase, phase: r.phase, database: r.database() } };
}

/**
 * `lockkeeper_ready` (1 when /readyz answers 200) and `lockkeeper_database_up` (0 while the
 * database is unavailable): an outage reads as ready-but-database-down.
 */
export function registerReadinessMetrics(registry: Registry, r: Readiness): void {
  new Gauge({
    name: 'lockkeeper_ready',
    help: 'Whether /readyz answers 200 (1): the replica is serving, not starting or stopping.',
    registers: [registry],
    collect() {
      this.set(r.phase === 'serving' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'lockkeeper_database_up',
    help: 'Whether the database answers (1) or is unavailable (0) as this replica sees it.',
    registers: [registry],
    collect() {
      this.set(r.database() === 'up' ? 1 : 0);
    },
  });
}

/**
 * Before GraphQL or REST run, a replica that is starting or stopping refuses with 503 and
 * Retry-After (probes and /metrics pass).
 */
export function phaseGuard(r: Readiness, exempt: readonly string[]): Guard {
  return (_req, res, path) => {
    if (r.phase === 'serving' || exempt.includes(path)) return false;
    const message = `lockkeeper is ${r.phase}; try again shortly`;
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': String(PHASE_RETRY_AFTER_S) });
    // The REST facade answers in Neon's shape, the rest as GraphQL does.
    res.end(JSON.stringify(path.startsWith('/control/') ? { msg: message } : { errors: [{ message, extensions: { code: 'UNAVAILABLE' } }] }));
    return true;
  };
}
