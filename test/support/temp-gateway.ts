import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { Started } from '../../src/start.ts';

/**
 * Gateways started in throw-away folders: `dir()` makes the test's folder, `track()` the
 * gateway it started; after each test the gateway is stopped and the folder removed.
 */
export function tempGateways(prefix: string) {
  let started: Started | undefined;
  let folder: string | undefined;
  afterEach(async () => {
    await started?.app.stop();
    started = undefined;
    if (folder) rmSync(folder, { recursive: true, force: true });
    folder = undefined;
  });
  return {
    dir: () => (folder = mkdtempSync(join(tmpdir(), prefix))),
    track: (s: Started) => (started = s),
    /** The gateway was stopped by the test itself. */
    forget: () => (started = undefined),
  };
}
