/**
 * What a backend hands a rehearsal (issue 33): its cluster's state as JSON, read through the
 * backend's own API, so that rehearsal/loaders/<plugin>.ts can load it into that plugin's
 * simulator. Only the loader of the same plugin reads `data`.
 */
export interface BackendSnapshot {
  /** The plugin's name (its folder under plugins/). */
  plugin: string;
  /** The backend's clock when the snapshot was read. */
  takenAt: number;
  /** Plugin-specific, JSON only (no functions, no class instances, no secrets). */
  data: unknown;
}
