/**
 * Issue 27: the CLI says "database unavailable" when the gateway answers but its database
 * does not (SQLite made unavailable by fault injection in the store), and exits 3 (try
 * again later), not 2 (refused).
 */
import { afterEach, expect, it } from 'vitest';
import { CliError, GatewayClient } from '../../src/cli/client.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

it('a field that needs the database: exit 3 with "database unavailable: <file> (…)"', async () => {
  t = await createTestApp({ topology: { nodes: [{ id: '1' }, { id: '2' }] }, dialect: 'sqlite' });
  const { url } = await t.app.start(0, '127.0.0.1');
  const client = new GatewayClient(new URL('/graphql', url).toString(), undefined);
  t.db.faults!.unavailable(true);
  const error = await client.request('{ eventLog { events { seq } } }').catch((e: unknown) => e);
  expect(error).toBeInstanceOf(CliError);
  expect((error as CliError).exitCode).toBe(3);
  expect((error as CliError).message).toBe(`database unavailable: ${t.db.file} (disk I/O error (injected fault)); try again once it is back`);
  t.db.faults!.unavailable(false);
  await expect(client.request('{ eventLog { events { seq } } }')).resolves.toMatchObject({ eventLog: { events: [] } });
});
