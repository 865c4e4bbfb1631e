import { Counter, Gauge, type Registry } from 'prom-client';
import type { Leadership } from './leadership.ts';

/**
 * ha:L6: `lockkeeper_leader` (1 on the leader, 0 on a stand-by), `lockkeeper_leader_epoch`
 * and `lockkeeper_leader_takeovers_total` (times this replica became leader).
 */
export function registerLeadershipMetrics(registry: Registry, leadership: Leadership): void {
  new Gauge({
    name: 'lockkeeper_leader',
    help: 'Whether this replica leads (1) or stands by (0).',
    registers: [registry],
    collect() {
      this.set(leadership.status().role === 'leader' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'lockkeeper_leader_epoch',
    help: 'The epoch this replica leads at (0 on a stand-by or alone on SQLite).',
    registers: [registry],
    collect() {
      this.set(leadership.status().epoch ?? 0);
    },
  });
  const takeovers = new Counter({ name: 'lockkeeper_leader_takeovers_total', help: 'Times this replica became leader.', registers: [registry] });
  leadership.onChange(({ role }) => {
    if (role === 'leader') takeovers.inc();
  });
}
