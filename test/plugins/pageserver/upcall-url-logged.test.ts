import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { systemClock } from '../../../src/cluster/clock.ts';
import { createPageserverBackend, pageserverOptionsSchema, type PageserverController } from '../../../plugins/pageserver/index.ts';
import { startPageserverFleet, type PageserverFleet } from '../../../simulators/pageserver/index.ts';
import { openDatabase, type Database } from '../../../src/store/index.ts';
import { PrismaPluginStore } from '../../../src/store/plugin-store.ts';

/** Issue 17, point 8: the upcall listener's URL is logged at start, so the pageservers' control_plane_api can be pointed at it. */

let fleet: PageserverFleet | undefined;
let controller: PageserverController | undefined;
let db: Database | undefined;
const dir = mkdtempSync(join(tmpdir(), 'lk-upcall-log-'));
afterEach(async () => {
  await controller?.close();
  await fleet?.close();
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

it('logs the upcall listener’s URL (with the port it was given) at start', async () => {
  fleet = await startPageserverFleet({ nodes: [{ id: 1 }], shards: [] });
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    }),
  );
  const options = pageserverOptionsSchema.parse({
    pageservers: [{ id: 1, url: fleet.sims.get(1)!.url, availabilityZone: 'az-a' }],
    stateFile: 'placement.json',
    upcall: { host: '127.0.0.1', port: 0 },
  });
  db = await openDatabase({ url: `file:${join(dir, 'lockkeeper.db')}` });
  controller = await createPageserverBackend(options, { configDir: dir, log, clock: systemClock, store: new PrismaPluginStore(db.prisma, 'pageserver') });
  const logged = lines.find((l) => typeof l.upcallUrl === 'string');
  expect(logged?.upcallUrl).toBe(`${controller.upcallUrl}/upcall/v1/`);
  expect(controller.upcallUrl).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
  expect(logged?.msg).toContain("the pageservers' control_plane_api");
});
