/**
 * The schema violations the pageserver simulators of this test file saw (kept on globalThis:
 * the vitest setup file and a test that imports this module share one list).
 */
const KEY = Symbol.for('lockkeeper.pageserverSchemaViolations');

export function pageserverSchemaViolations(): string[] {
  const g = globalThis as { [KEY]?: string[] };
  return (g[KEY] ??= []);
}

/** Takes (and clears) the violations seen so far: for a test that sends a bad request on purpose. */
export function takePageserverSchemaViolations(): string[] {
  return pageserverSchemaViolations().splice(0);
}
