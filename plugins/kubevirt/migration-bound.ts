/**
 * KubeVirt's own bounds on one live migration (k8s:C10, issue 26 point 5), from the
 * configuration KubeVirt merged for it (`vmi.status.migrationState.migrationConfiguration`)
 * or, before it starts, from the KubeVirt CR's `spec.configuration.migrations` with
 * KubeVirt's defaults where absent.
 */
/** A VM's or VMI's `spec`, read field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Kubernetes objects are free-form JSON here
type Spec = Record<string, any> | undefined;

/** `virt-config.go`: `MigrationCompletionTimeoutPerGiB` and `MigrationProgressTimeout`, seconds. */
const DEFAULTS = { completionTimeoutPerGiB: 150, progressTimeout: 150 };
/** `defaultCatchAllPendingTimeoutSeconds`: the longest a target pod pends before KubeVirt fails the migration. */
export const PENDING_BOUND_MS = 900_000;
const GIB = 1024 ** 3;
const SUFFIX: Record<string, number> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: GIB, Ti: 1024 ** 4, Pi: 1024 ** 5, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15 };

export interface MigrationSettings {
  completionTimeoutPerGiB: number;
  progressTimeout: number;
  allowPostCopy: boolean;
  allowWorkloadDisruption: boolean;
}

/** The settings that apply: the migration's own (KubeVirt merged them), else the cluster's, else KubeVirt's defaults. */
export function migrationSettings(own: Record<string, unknown> | undefined, cluster: Record<string, unknown>): MigrationSettings {
  const pick = <T>(key: string, fallback: T): T => (own?.[key] ?? cluster[key] ?? fallback) as T;
  return {
    completionTimeoutPerGiB: pick('completionTimeoutPerGiB', DEFAULTS.completionTimeoutPerGiB),
    progressTimeout: pick('progressTimeout', DEFAULTS.progressTimeout),
    allowPostCopy: pick('allowPostCopy', false),
    allowWorkloadDisruption: pick('allowWorkloadDisruption', false),
  };
}

/** Bytes of a Kubernetes quantity; null when it is not one. */
function quantityBytes(q: unknown): number | null {
  if (typeof q === 'number') return q;
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$/.exec(String(q));
  return m ? Number(m[1]) * SUFFIX[m[2] ?? '']! : null;
}

/** The memory a migration copies, in whole GiB rounded up as KubeVirt does (`memory.guest`, else the memory request; 1 when unknown). */
export function memoryGiB(spec: Spec): number {
  const domain = spec?.domain;
  const bytes = quantityBytes(domain?.memory?.guest ?? domain?.resources?.requests?.memory ?? '1Gi');
  return Math.max(1, Math.ceil((bytes ?? GIB) / GIB));
}

/** From KubeVirt's start to its completion timeout: `completionTimeoutPerGiB` × memory in GiB (post-copy or a pause then finish it). */
export const completionBoundMs = (settings: MigrationSettings, gib: number): number => settings.completionTimeoutPerGiB * gib * 1000;

/** The longest KubeVirt lets one migration of this VM run: its target pod's pending bound, then its completion bound. */
export function migrationBoundMs(vmSpec: Spec, cluster: Record<string, unknown>): number {
  return PENDING_BOUND_MS + completionBoundMs(migrationSettings(undefined, cluster), memoryGiB(vmSpec));
}

/** Which of KubeVirt's bounds ended a migration, from its failure reason; null when none did. */
export function boundOf(reason: string): string | null {
  if (/stuck for \d+ sec/.test(reason)) return "KubeVirt's progressTimeout (no progress for that long)";
  if (/not completed after \d+ sec/.test(reason)) return "KubeVirt's completion timeout (completionTimeoutPerGiB × memory)";
  if (/pod .* timeout period exceeded/.test(reason)) return "KubeVirt's pending target pod timeout";
  return null;
}
