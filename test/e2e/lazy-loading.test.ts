/**
 * Issue 15 point 2: a plugin's heavy dependencies load only when the config names that
 * plugin. The demo gateway (fake plugin, SQLite) runs in a child process under a
 * module-loading hook that records every module it loads, answers a query, and stops;
 * then no module of the other plugins, of their packages, of PostgreSQL or of the client
 * verbs may be in the record.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { postGraphQL, spawnLockkeeper, type ChildServer } from '../support/child-server.ts';

const RECORDER = fileURLToPath(new URL('../support/module-recorder/register.mjs', import.meta.url));

/** What the demo gateway must never load, by what its URLs contain. */
const NOT_FOR_THE_DEMO: Record<string, RegExp> = {
  'the kubevirt plugin': /\/plugins\/kubevirt\//,
  'the pageserver plugin': /\/plugins\/pageserver\//,
  '@kubernetes/client-node': /\/node_modules\/@kubernetes\/client-node\//,
  'kubernetes-models': /\/node_modules\/kubernetes-models\//,
  'pg (PostgreSQL driver)': /\/node_modules\/pg\//,
  "Prisma's PostgreSQL adapter": /\/node_modules\/@prisma\/adapter-pg\//,
  "the store's PostgreSQL modules": /\/src\/store\/postgresql-/,
  'the client verbs of the command line': /\/src\/cli\//,
};

let server: ChildServer | undefined;
let dir: string | undefined;
afterEach(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill('SIGKILL');
    await server.exited;
  }
  server = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('load only what is used', () => {
  it('the demo gateway loads no module of an unconfigured plugin, of PostgreSQL or of the client verbs', { timeout: 180_000 }, async () => {
    dir = mkdtempSync(join(tmpdir(), 'lk-lazy-'));
    const log = join(dir, 'modules.txt');
    const started = spawnLockkeeper(
      { LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lk.db')}`, LOCKKEEPER_MODULE_LOG: log },
      dir,
      ['serve'],
      ['--import', RECORDER],
    );
    server = started;
    await started.ready;
    // Resolvers, the dashboard route and the event log are used, not only loaded.
    expect((await postGraphQL(`${started.url}`, '{ nodes { totalCount } vms { totalCount } shards { totalCount } }')).nodes.totalCount).toBe(4);
    started.child.kill('SIGTERM');
    expect((await started.exited).code).toBe(0);

    const loaded = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    // The record is real: the demo's own plugin, the SQLite driver and the GraphQL server are in it.
    expect(loaded.some((url) => /\/plugins\/fake\/index\.ts$/.test(url))).toBe(true);
    expect(loaded.some((url) => /\/node_modules\/better-sqlite3\//.test(url))).toBe(true);
    expect(loaded.some((url) => /\/node_modules\/graphql-yoga\//.test(url))).toBe(true);

    const found = Object.entries(NOT_FOR_THE_DEMO)
      .map(([what, pattern]) => [what, loaded.filter((url) => pattern.test(url))] as const)
      .filter(([, urls]) => urls.length)
      .map(([what, urls]) => `${what}: ${urls.slice(0, 3).join(', ')}`);
    expect(found).toEqual([]);
  });
});
