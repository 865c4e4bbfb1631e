/**
 * ha:B1 with `--tenants`: `lockkeeper simulator` as its own process serves simulated
 * pageservers and the compute hook beside the Kubernetes API, and writes a config whose
 * `pageserver` plugin points at them. A gateway started on that config (a child process, on
 * the real plugins) drains a node's shards: every cut-over is told to the computes through
 * the simulator's hook (neon:C7). Unsharded tenants: the hook names a sharded tenant only once
 * it knows where every shard of it is (neon:C12), which a drain of half of them does not teach it. Waits are for states, never for a length of time.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postGraphQL, until } from '../support/child-server.ts';
import { HaProcesses } from '../support/ha-processes.ts';
import { NOTIFICATIONS_PATH, type NotifyAttachBody, type RecordedNotification } from '../../simulators/compute-hook/index.ts';

const processes = new HaProcesses();
afterEach(() => processes.stop());

describe('lockkeeper simulator --tenants', () => {
  it(
    'ha:B1: serves pageservers and the compute hook; a gateway on its config drains node 1 and the hook hears where every moved tenant now is',
    { timeout: 300_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lk-sim-ps-'));
      const sim = await processes.simulator(dir, ['--nodes', '2', '--vms-per-node', '0', '--separate-hosts', '--tenants', '4', '--shards-per-tenant', '1']);
      expect(sim.computeHook).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const written = JSON.parse(readFileSync(sim.config, 'utf8')) as { plugins: { name: string; options: { controlPlane?: { url: string } } }[] };
      expect(written.plugins.map((p) => p.name)).toEqual(['kubevirt', 'pageserver']);
      expect(written.plugins[1]!.options.controlPlane).toEqual({ url: sim.computeHook });

      const gateway = await processes.replica('g', sim.config, dir, `file:${join(dir, 'lockkeeper.db')}`);
      const shardsOn = async (node: string) =>
        (
          (await postGraphQL(gateway.url, `{ shards(nodeId: "${node}", first: 500) { edges { node { id tenantId } } } }`)).shards.edges as {
            node: { id: string; tenantId: string };
          }[]
        ).map((e) => e.node);
      const before = await shardsOn('1');
      expect(before.length).toBeGreaterThan(0);
      const started = await postGraphQL(
        gateway.url,
        'mutation { startNodeDrain(nodeId: "1") { __typename ... on Operation { id } ... on Error { message } } }',
      );
      expect(started.startNodeDrain.__typename).toBe('Operation');
      const id = started.startNodeDrain.id as string;
      const op = await until(
        async () => {
          const o = (await postGraphQL(gateway.url, `{ operation(id: "${id}") { ... on Operation { state counts { moved } } } }`)).operation;
          return o.state === 'RUNNING' || o.state === 'CANCELLING' ? undefined : o;
        },
        'the drain to end',
        240_000,
        100,
      );
      expect(op).toEqual({ state: 'SUCCEEDED', counts: { moved: before.length } });
      expect(await shardsOn('1')).toEqual([]);

      // The computes were told: for each tenant that had a shard on node 1, the last notification answered 2xx names only node 2.
      const { items } = (await (await fetch(new URL(NOTIFICATIONS_PATH, sim.computeHook!))).json()) as { items: RecordedNotification[] };
      for (const tenantId of new Set(before.map((s) => s.tenantId))) {
        const last = items.filter((n) => n.status === 200 && (n.body as NotifyAttachBody).tenant_id === tenantId).at(-1);
        expect(last, `a notification for tenant ${tenantId}`).toBeDefined();
        expect((last!.body as NotifyAttachBody).shards.map((s) => s.node_id)).toEqual((last!.body as NotifyAttachBody).shards.map(() => 2));
      }
    },
  );
});
