/**
 * The demo survives a restart (issue 17 point 2): with no config at all, the demo cluster
 * keeps its state next to the database (`./data/demo-cluster.json`), so stopping the gateway
 * mid-maintenance and starting it again resumes against the same cluster and finishes;
 * `--reset-demo` starts over, and refuses to touch anything that is not a demo.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { postGraphQL, until } from '../support/child-server.ts';
import { tempGateways } from '../support/temp-gateway.ts';

const gateways = tempGateways('lk-demo-');

/** The built-in demo: no LOCKKEEPER_CONFIG, no config file, no database URL; everything under `cwd`. */
async function demo(cwd: string, resetDemo = false): Promise<Started> {
  return gateways.track(await startLockkeeper({ log: createLogger('silent'), env: {}, cwd, port: 0, resetDemo }));
}

const NODE_4 = `{ node(id: "4") { ... on ClusterNode { cordoned maintenancePhase schedulingPolicy } }
  vms(first: 100) { edges { node { id status node { id } } } } operations { totalCount } }`;

describe('the default demo cluster is durable', () => {
  it('keeps its state in ./data/ next to the database: a gateway stopped mid-maintenance resumes against the same cluster and completes', async () => {
    const dir = gateways.dir();
    let s = await demo(dir);
    expect(s.databaseFile).toBe(join(dir, 'data', 'lockkeeper.db'));
    expect(existsSync(join(dir, 'data', 'demo-cluster.json'))).toBe(true);
    // Slow migrations, so that the stop surely comes mid-maintenance; the latencies are part of the cluster's state.
    await postGraphQL(s.url, 'mutation { simulation { setLatencies(input: { migrate: 3000, stop: 50, start: 50, cutOver: 20, cordon: 5 }) { __typename } } }');
    const op = await postGraphQL(
      s.url,
      'mutation { r: enableMaintenanceMode(nodeId: "4", reason: "durable demo") { __typename ... on Operation { id } ... on Error { code message } } }',
    );
    expect(op.r.__typename).toBe('Operation');
    // A stop has happened (node cordoned, the Shutdown VM off) but migrations are still under way.
    await until(async () => {
      const d = await postGraphQL(s.url, NODE_4);
      const batch = d.vms.edges.find((e: any) => e.node.id === 'prod/batch-4').node;
      return d.node.cordoned && batch.status === 'STOPPED' ? true : undefined;
    }, 'node 4 cordoned and prod/batch-4 stopped');
    expect((await postGraphQL(s.url, NODE_4)).node.maintenancePhase).toMatch(/^(DRAINING|EVACUATING)$/);
    await s.app.stop();
    gateways.forget();

    // Started again on the same folder: the cluster remembers (cordoned, VM stopped), the maintenance resumes and completes.
    s = await demo(dir);
    const after = await postGraphQL(s.url, NODE_4);
    expect(after.node.cordoned).toBe(true);
    expect(after.vms.edges.find((e: any) => e.node.id === 'prod/batch-4').node.status).toBe('STOPPED');
    const done = await until(
      async () => {
        const d = await postGraphQL(s.url, `{ operation(id: "${op.r.id}") { ... on Operation { state error waitingOn { description } } } }`);
        return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(d.operation.state) ? d.operation : undefined;
      },
      'the resumed maintenance to end',
      60_000,
    );
    expect(done).toMatchObject({ state: 'SUCCEEDED', error: null });
    const final = await postGraphQL(s.url, NODE_4);
    expect(final.node.maintenancePhase).toBe('COMPLETED');
    expect(final.vms.edges.filter((e: any) => e.node.node?.id === '4')).toEqual([]);
    expect(final.operations.totalCount).toBe(1);
  }, 120_000);

  it('--reset-demo starts over: a fresh database and the demo topology again', async () => {
    const dir = gateways.dir();
    let s = await demo(dir);
    await postGraphQL(s.url, 'mutation { simulation { setNodeOnline(nodeId: "3", online: false) { __typename } } }');
    await postGraphQL(s.url, 'mutation { r: startNodeDrain(nodeId: "1", reason: "before reset") { __typename } }');
    await s.app.stop();
    gateways.forget();

    s = await demo(dir, true);
    const d = await postGraphQL(s.url, '{ node(id: "3") { ... on ClusterNode { availability } } operations { totalCount } auditLog(first: 5) { totalCount } }');
    expect(d).toEqual({ node: { availability: 'ACTIVE' }, operations: { totalCount: 0 }, auditLog: { totalCount: 0 } });
  }, 60_000);

  it('--reset-demo refuses a config that is not the demo, and deletes nothing', async () => {
    const dir = gateways.dir();
    writeFileSync(join(dir, 'lockkeeper.config.json'), JSON.stringify({ plugins: [{ name: 'fake', options: { topology: 'empty' } }] }));
    const s = await demo(dir);
    const db = s.databaseFile;
    await s.app.stop();
    gateways.forget();
    await expect(demo(dir, true)).rejects.toThrow(/^--reset-demo only resets the demo cluster; plugins\[0\] \("fake"\) is not a demo, so nothing was deleted$/);
    gateways.forget();
    expect(existsSync(db)).toBe(true);
  });
});
