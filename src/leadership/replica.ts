import type { LockkeeperConfig } from '../config/schema.ts';
import type { Logger } from '../logger.ts';
import type { Database } from '../store/index.ts';
import { LeaseStore } from './lease-store.ts';
import { PostgresLeadership } from './leadership.ts';

/** A replica started with an in-process backend while another replica leads on the same database (ha:B3). */
class UnsharedBackendError extends Error {
  override readonly name = 'UnsharedBackendError';
}

/**
 * The leadership of a replica on PostgreSQL (ha:L1). Refuses to start one whose backend is
 * the in-process simulated cluster while another replica holds the lease (ha:B3): the two
 * would act on two different clusters, each believing it the only one.
 */
export async function replicaLeadership(
  db: Database,
  config: Pick<LockkeeperConfig, 'ha'>,
  /** The configured plugins that declare `inProcess` (src/cluster/plugin.ts). */
  inProcess: readonly string[],
  deps: { address: () => string; log: Logger },
): Promise<PostgresLeadership> {
  const lease = new LeaseStore(db.prisma);
  if (inProcess.length) {
    const current = await lease.current();
    if (current.live) {
      throw new UnsharedBackendError(
        `another replica (${current.holder} at ${current.address ?? 'an unknown address'}) leads on ${db.file}, and this replica's backend ` +
          `is the in-process "${inProcess[0]}" simulated cluster, which no other replica can see: replicas must share one cluster. ` +
          'Run `lockkeeper simulator --config-out FILE` and start every replica with LOCKKEEPER_CONFIG=FILE',
      );
    }
  }
  return new PostgresLeadership({ lease, address: deps.address, log: deps.log, leaseTtlMs: config.ha.leaseTtlMs, leaseRenewMs: config.ha.leaseRenewMs });
}
