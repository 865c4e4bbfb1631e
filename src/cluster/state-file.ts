/**
 * Small state files for plugins that keep their own state beside the gateway's database
 * (the simulated cluster's world, a pageserver controller's placement and generations).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { z } from 'zod';
import { describeIssues } from './zod-issues.ts';

/**
 * The file's JSON, or null when there is no file yet. A file that is not JSON is
 * reported through `invalid` (which names the file): never silently replaced.
 */
export function readJsonFile(path: string, invalid: (reason: string) => Error): unknown | null {
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw invalid(`cannot be read as JSON (${(error as Error).message}); fix or delete it`);
  }
}

/** The first few problems zod found in a state file, on one line for its error message. */
export function describeSchemaIssues(error: z.ZodError, max = 5): string {
  return describeIssues(error, { max, separator: '; ', index: 'dot' });
}

/**
 * Replaces the file atomically: the content goes to `<path>.tmp` (overwriting any left by
 * a crash), then is renamed over the old file, so a process killed at any instant leaves
 * either the old or the new content. Synchronous, so nothing runs between a decision and
 * its record. No fsync: this survives `kill -9`, not a power loss.
 */
export function writeFileAtomic(path: string, content: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, content);
  renameSync(tmp, path);
}
