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
  })
  .strict();

/** Options of the `pageserver` plugin; unknown keys are rejected by name. */
export const pageserverOptionsSchema = z
  .object({
    pageservers: z.array(pageserverSchema).min(1),
    /** Sent as `Authorization: Bearer …` to every pageserver. */
    authToken: z.string().min(1).optional(),
    /** Period of `GET /v1/utilization` per pageserver. */
    heartbeatIntervalMs: ms.min(1).default(5000),
    /** A pageserver with no good heartbeat for this long is OFFLINE. */
    offlineAfterMs: ms.min(1).default(30_000),
    /** How long a cut-over waits for the destination secondary to finish downloading. */
    downloadWaitMs: ms.default(20_000),
    /** Timeout of one HTTP request to a pageserver. */
    requestTimeoutMs: ms.min(1).default(10_000),
    /** Retries of a request that failed with 5xx, a timeout or a connection error. */
    retry: z
      .object({ attempts: z.number().int().min(1).max(20).default(3), backoffMs: ms.default(200) })
      .strict()
      .default({ attempts: 3, backoffMs: 200 }),
    /** Where shard placement and generations are persisted; relative to the config file's directory. */
    stateFile: z.string().min(1).default('pageserver-state.json'),
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
