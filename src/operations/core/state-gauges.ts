/**
 * Gauges of the cluster's state, read at each scrape, to alert on (issue 17: an ERROR phase
 * must be able to page someone): node availability and maintenance phase (one series per
 * node and value, 1 for the current one), and operations by kind and state.
 */
import { Gauge, type Registry } from 'prom-client';
import { OPERATION_KINDS, OPERATION_STATES, type OperationKind, type OperationState } from '../../domain/operations.ts';
import { MAINTENANCE_PHASES, type MaintenancePhase } from '../../domain/vm/types.ts';

const AVAILABILITIES = ['ACTIVE', 'WARMING_UP', 'OFFLINE'] as const;
/** The maintenance phase label of a node that is not in maintenance. */
const NOT_IN_MAINTENANCE = 'NONE';

export interface StateSources {
  nodes(): Promise<{ id: string; availability: string }[]>;
  maintenancePhase(nodeId: string): MaintenancePhase | null;
  operationCounts(): Promise<{ kind: OperationKind; state: OperationState; count: number }[]>;
  /** A read failed: the scrape goes on without these series. */
  onError(error: unknown): void;
}

const ONE_OF = <T extends string>(values: readonly T[], current: string) => values.map((value) => [value, value === current ? 1 : 0] as const);

export function registerStateGauges(registry: Registry, prefix: string, sources: StateSources): void {
  /** A gauge whose series are rebuilt from `fill` at each scrape; a failed read leaves it empty and is reported. */
  const gauge = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    fill: (set: (labels: Record<L, string>, value: number) => void) => Promise<void>,
  ) =>
    new Gauge<L>({
      name: `${prefix}${name}`,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        try {
          await fill((labels, value) => this.set(labels as Partial<Record<L, string>>, value));
        } catch (e) {
          sources.onError(e);
        }
      },
    });

  gauge(
    'node_availability',
    'Availability of each node as the backend reports it: 1 for its current value (ACTIVE, WARMING_UP, OFFLINE), 0 for the others.',
    ['node', 'availability'],
    async (set) => {
      for (const n of await sources.nodes()) for (const [availability, v] of ONE_OF(AVAILABILITIES, n.availability)) set({ node: n.id, availability }, v);
    },
  );
  gauge(
    'node_maintenance_phase',
    `VM maintenance phase of each node: 1 for its current phase (${NOT_IN_MAINTENANCE} when not in maintenance), 0 for the others. Alert on phase="ERROR".`,
    ['node', 'phase'],
    async (set) => {
      for (const n of await sources.nodes()) {
        const current = sources.maintenancePhase(n.id) ?? NOT_IN_MAINTENANCE;
        for (const [phase, v] of ONE_OF([...MAINTENANCE_PHASES, NOT_IN_MAINTENANCE], current)) set({ node: n.id, phase }, v);
      }
    },
  );
  gauge(
    'operations',
    'Operations in the database by kind and state (RUNNING, CANCELLING, PAUSED, SUCCEEDED, FAILED, CANCELLED).',
    ['kind', 'state'],
    async (set) => {
      for (const kind of OPERATION_KINDS) for (const state of OPERATION_STATES) set({ kind, state }, 0);
      for (const { kind, state, count } of await sources.operationCounts()) set({ kind, state }, count);
    },
  );
}
