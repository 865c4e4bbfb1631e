import { z } from 'zod';

const ms = z.number().int().nonnegative();

const pageserverSchema = z
  .object({
    /** Neon's node id (an integer); the ClusterNode id is its decimal string. */
    id: z.number().int().nonnegative(),
    /** Base URL of the pageserver's HTTP API, e.g. `http://ps-1:9898`. */
    url: z.string().url(),
    availabilityZone: z.string().min(1),
    name: z.string().min(1).optional(),
    /**
     * Hyperconverged hosts (issue 26): the name of the Kubernetes node this pageserver runs on.
     * Combined with the kubevirt plugin, the two are one node, named by this (the Neon REST
     * facade keeps the integer id). Absent: a host of its own.
     */
    kubernetesNode: z.string().min(1).optional(),
    /** Where its libpq listener is (the REST facade's `listen_pg_*`); default: the URL's host, port 6400. */
    pg: z
      .object({ host: z.string().min(1), port: z.number().int().min(1).max(65535) })
      .strict()
      .optional(),
  })
  .strict();

/**
 * The compute notification hook (neon:C12): Neon's `--control-plane-url` and
 * `--control-plane-jwt-token`. The URL must be http(s); a malformed one fails start-up
 * naming this key.
 */
const controlPlaneSchema = z
  .object({
    url: z
      .string()
      .url()
      .refine((u) => /^https?:\/\//.test(u), 'must be an http:// or https:// URL'),
    token: z.string().min(1).optional(),
  })
  .strict();

/** Options of the `pageserver` plugin; unknown keys are rejected by name. */
export const pageserverOptionsSchema = z
  .object({
    /**
     * Pageservers registered at start (the seed): nodes that register later through
     * `POST /control/v1/node` or the re-attach upcall join them (neon:L1, neon:L2).
     */
    pageservers: z.array(pageserverSchema).default([]),
    /** Sent as `Authorization: Bearer …` to every pageserver. */
    authToken: z.string().min(1).optional(),
    /** neon:H1: period of a heartbeat round (Neon `HEARTBEAT_INTERVAL_DEFAULT`). */
    heartbeatIntervalMs: ms.min(1).default(5000),
    /** neon:H3: a node seen available becomes OFFLINE this long after its last good heartbeat (`MAX_OFFLINE_INTERVAL_DEFAULT`). */
    maxOfflineIntervalMs: ms.min(1).default(30_000),
    /** neon:H3: a WARMING_UP node that never answers becomes OFFLINE this long after it re-attached (`MAX_WARMING_UP_INTERVAL_DEFAULT`). */
    maxWarmingUpIntervalMs: ms.min(1).default(300_000),
    /** neon:C3: total warm-up of a destination secondary outside drains and fills (`SECONDARY_WARMUP_TIMEOUT_DEFAULT`). */
    secondaryWarmupTimeoutMs: ms.default(300_000),
    /** neon:C3: one `secondary/download` long poll (`SECONDARY_DOWNLOAD_REQUEST_TIMEOUT_DEFAULT`). */
    secondaryDownloadRequestTimeoutMs: ms.min(1).default(20_000),
    /** neon:C14: period of the background reconcile pass (`BACKGROUND_RECONCILE_PERIOD`). */
    backgroundReconcileIntervalMs: ms.min(1).default(20_000),
    /** The compute notification hook; absent: no notifications are sent and neon:C7 is skipped (logged, shown on the step). */
    controlPlane: controlPlaneSchema.optional(),
    /**
     * A state file of an earlier version (placement and generations in a JSON file): read
     * once at start into the gateway's database, its generations continued, and never
     * written again. Relative to the config's directory.
     */
    stateFile: z.string().min(1).optional(),
    /**
     * The controller's own listener for the pageservers' upcalls (`/upcall/v1/re-attach`,
     * `/upcall/v1/validate`). With `token`, an upcall must carry `Authorization: Bearer <token>`
     * (the pageservers' `control_plane_api_token`); others get 401.
     */
    upcall: z
      .object({
        host: z.string().min(1).default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).default(0),
        token: z.string().min(1).optional(),
      })
      .strict()
      .default({ host: '127.0.0.1', port: 0 }),
  })
  .strict()
  .superRefine((o, ctx) => {
    const ids = o.pageservers.map((p) => p.id);
    const dup = ids.find((id, i) => ids.indexOf(id) !== i);
    if (dup !== undefined) ctx.addIssue({ code: 'custom', path: ['pageservers'], message: `duplicate pageserver id ${dup}` });
  });

export type PageserverOptions = z.output<typeof pageserverOptionsSchema>;
export type PageserverOptionsInput = z.input<typeof pageserverOptionsSchema>;
