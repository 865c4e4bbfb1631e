/**
 * The set-up and assertions the high-availability acceptance tests share (real processes,
 * test/leadership): vitest-side, apart from ha-processes.ts, which bench/takeover.ts imports
 * outside vitest.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { expect } from 'vitest';
import { HaProcesses, type ReplicaProcess, type SimulatorProcess } from './ha-processes.ts';
import { createPostgresDatabase } from './test-database.ts';

export interface HaCluster {
  sim: SimulatorProcess;
  /** The replicas' database, to read what they wrote. */
  db: pg.Client;
  /** The replicas started at first, in the order of `names`. */
  replicas: ReplicaProcess[];
  /** Starts one more replica on the same config and database. */
  replica(name: string): Promise<ReplicaProcess>;
}

/**
 * `lockkeeper simulator` with `nodes` worker nodes of `vmsPerNode` VMs each (a migration takes
 * `migrateMs`), a fresh PostgreSQL database, and replicas `names` on the simulator's config
 * with short leases and at most `outbound` migrations per node at once.
 */
export async function startHaCluster(
  processes: HaProcesses,
  setUp: { prefix: string; vmsPerNode: number; migrateMs: number; outbound: number; names?: string[] },
): Promise<HaCluster> {
  const dir = mkdtempSync(join(tmpdir(), setUp.prefix));
  const sim = await processes.simulator(dir, ['--nodes', '3', '--vms-per-node', String(setUp.vmsPerNode), '--migrate-ms', String(setUp.migrateMs)]);
  const config = HaProcesses.config(dir, sim.config, { operations: { maxOutboundMigrationsPerNode: setUp.outbound } });
  const url = await createPostgresDatabase();
  const db = await processes.database(url);
  const replica = (name: string) => processes.replica(name, config, dir, url);
  const replicas: ReplicaProcess[] = [];
  for (const name of setUp.names ?? ['r1', 'r2', 'r3']) replicas.push(await replica(name));
  return { sim, db, replicas, replica };
}

/** Every VM of the cluster has one VMI, running on a node other than `node`. */
export async function everyVmOnce(sim: SimulatorProcess, node: string, vmCount: number) {
  const vmis = (await sim.get('/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances')) as {
    items: { metadata: { name: string }; status: { nodeName: string; phase: string } }[];
  };
  const names = vmis.items.map((v) => v.metadata.name);
  expect(new Set(names).size).toBe(names.length);
  expect(names).toHaveLength(vmCount);
  expect(vmis.items.filter((v) => v.status.nodeName === node)).toEqual([]);
  expect(vmis.items.every((v) => v.status.phase === 'Running')).toBe(true);
}
