import { z } from 'zod';

const ms = z.number().int().positive();

/** k8s:U1: Harvester's setting, in seconds; `vmMigrationTimeout` 0 means 180. */
const nodeDownSchema = z
  .object({
    enable: z.boolean().default(false),
    /** From Ready `Unknown` to the drain taint (stage 1). Must be > 0. */
    period: z.number().int().positive().default(15),
    /** From `Drained=False` to out-of-service (stage 2, after confirmNodeDown). Negative is invalid; 0 means 180. */
    vmMigrationTimeout: z
      .number()
      .int()
      .min(0)
      .default(180)
      .transform((v) => (v === 0 ? 180 : v)),
  })
  .strict();

/** Options of the `kubevirt` plugin (config `plugins[].options`); unknown keys are rejected by name. */
export const kubevirtOptionsSchema = z
  .object({
    /**
     * Kubeconfig file (relative to the config file's directory). Absent: the in-cluster
     * service account when running in a pod, else `$KUBECONFIG` / `~/.kube/config`.
     */
    kubeconfigPath: z.string().min(1).optional(),
    /** Context of the kubeconfig to use; absent: its current context. */
    context: z.string().min(1).optional(),
    /** Namespaces whose VMs are managed; absent or empty: every namespace (cluster-wide list/watch). */
    namespaces: z.array(z.string().min(1)).default([]),
    /** Namespace of Longhorn's replicas. */
    longhornNamespace: z.string().min(1).default('longhorn-system'),
    /** How long a stop or start may take before the action fails (Transient). */
    vmActionTimeoutMs: ms.default(5 * 60_000),
    /**
     * A backstop only: how far past KubeVirt's own bound (its pending bound until KubeVirt
     * starts the migration, then `completionTimeoutPerGiB` × memory from KubeVirt's start)
     * Lockkeeper lets one of its migrations run before it cancels it (Transient). KubeVirt's
     * timeouts end a migration first; this catches one KubeVirt failed to end.
     */
    migrationBackstopMs: ms.default(10 * 60_000),
    /** First delay before a dropped watch is resumed; doubles up to `watchBackoffMaxMs`. */
    watchBackoffMs: ms.default(500),
    watchBackoffMaxMs: ms.default(30_000),
    /** Server-side timeout of each watch request; the watch is resumed from its last resourceVersion after it. */
    watchTimeoutSeconds: z.number().int().positive().default(300),
    /** Attempts of a read-modify-write that meets 409 Conflict before the action fails with Conflict. */
    conflictRetries: z.number().int().min(0).default(5),
    /**
     * k8s:H9: `auto` delegates to Harvester's controllers when the CRD `settings.harvesterhci.io`
     * exists (looked for at start), `delegate` and `act` force either mode.
     */
    harvester: z.enum(['auto', 'delegate', 'act']).default('auto'),
    /** k8s:U1/U7: node-down handling (Harvester's `vm-force-reset-policy`), off by default and never while delegating. */
    nodeDown: nodeDownSchema.prefault({}),
  })
  .strict();

export type KubevirtOptions = z.output<typeof kubevirtOptionsSchema>;
export type KubevirtOptionsInput = z.input<typeof kubevirtOptionsSchema>;
