/**
 * ha:R2, ha:R4 over HTTP: a client may send any mutation to any replica. With `lockkeeper
 * simulator` and two replica processes on one PostgreSQL, mutations asked of the stand-by
 * are forwarded to the leader (src/http/leader-forward.ts) and answered with the leader's
 * answer — including those only the leader can carry out (disabling a maintenance), which a
 * stand-by on its own answers `UnavailableError`. Queries stay local. Waits are for states.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FORWARDED_HEADER, FORWARDED_TO_HEADER } from '../../src/http/leader-forward.ts';
import { until } from '../support/child-server.ts';
import { HaProcesses, leaderOf } from '../support/ha-processes.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
const processes = new HaProcesses();
afterEach(() => processes.stop());

/** One GraphQL request over HTTP: its answer and who ran it (the forward's header). */
async function ask(url: string, query: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query }) });
  const body = (await res.json()) as { data?: any; errors?: unknown };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return { data: body.data, forwardedTo: res.headers.get(FORWARDED_TO_HEADER) };
}

const DISABLE = 'mutation { disableMaintenanceMode(nodeId: "node-1") { __typename ... on Error { code message } } }';

describe.skipIf(skip)(skip ?? 'mutations asked of a stand-by', () => {
  it(
    'ha:R2, ha:R4: are forwarded to the leader and answered with its answer (a maintenance enabled and disabled through the stand-by); queries stay local; a forwarded request is never forwarded again',
    { timeout: 300_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lk-forward-'));
      const sim = await processes.simulator(dir, ['--nodes', '3', '--vms-per-node', '2', '--migrate-ms', '100']);
      const config = HaProcesses.config(dir, sim.config, { ha: { leaseTtlMs: 4000, leaseRenewMs: 1000 } });
      const url = await createPostgresDatabase();
      const replicas = [await processes.replica('r1', config, dir, url), await processes.replica('r2', config, dir, url)];
      const { leader } = await leaderOf(replicas);
      const standby = replicas.find((r) => r !== leader)!;
      const leaderOrigin = new URL(leader.url).origin;

      const enabled = await ask(standby.url, 'mutation { enableMaintenanceMode(nodeId: "node-1") { __typename ... on Operation { id } } }');
      expect(enabled.forwardedTo).toBe(leaderOrigin);
      expect(enabled.data.enableMaintenanceMode.__typename).toBe('Operation');
      const phase = async () =>
        (await ask(standby.url, '{ node(id: "node-1") { ... on ClusterNode { maintenancePhase } } }')).data.node.maintenancePhase as string;
      await until(async () => ((await phase()) === 'COMPLETED' ? true : undefined), 'the maintenance to complete', 120_000, 100);
      // A query is answered by the stand-by itself (ha:R1).
      expect((await ask(standby.url, '{ node(id: "node-1") { ... on ClusterNode { id } } }')).forwardedTo).toBeNull();

      // Marked as forwarded already, the stand-by runs it itself: what only the leader can do is refused there, and nothing changed.
      const local = await ask(standby.url, DISABLE, { [FORWARDED_HEADER]: '1' });
      expect(local.forwardedTo).toBeNull();
      expect(local.data.disableMaintenanceMode).toMatchObject({ __typename: 'UnavailableError', code: 'UNAVAILABLE' });
      expect(await phase()).toBe('COMPLETED');

      const disabled = await ask(standby.url, DISABLE);
      expect(disabled.forwardedTo).toBe(leaderOrigin);
      expect(disabled.data.disableMaintenanceMode.__typename).toBe('DisableMaintenanceResult');
      await until(async () => ((await phase()) === null ? true : undefined), 'the node out of maintenance', 60_000, 100);
    },
  );
});
