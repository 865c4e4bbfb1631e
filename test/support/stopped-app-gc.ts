/**
 * Run by test/operations/stopped-app-collected.test.ts in a child process with --expose-gc:
 * builds an app over a simulated cluster, stops it, drops it, and prints whether the garbage
 * collector could take it. A worker that runs rehearsal samples one after the other builds
 * and stops an app per sample: what a stopped app leaves reachable grows with every sample.
 */
import { createTestApp } from './graphql-app.ts';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

async function buildAndStop(): Promise<WeakRef<object>> {
  const t = await createTestApp({
    topology: { generate: { nodes: 4, zones: 2, vmsPerNode: 5, tenants: 20, shardsPerTenant: 1, secondariesPerShard: 1, seed: 1 } },
  });
  await t.app.ready();
  // The metrics are read once, as a scrape would (prom-client's default metrics start observing GC).
  await t.gql('{ __typename }');
  const ref = new WeakRef(t.app);
  await t.stop();
  return ref;
}

const ref = await buildAndStop();
for (let i = 0; i < 10 && ref.deref() !== undefined; i++) {
  await new Promise((resolve) => setTimeout(resolve, 20));
  gc();
}
process.stdout.write(JSON.stringify({ collected: ref.deref() === undefined }));
