/**
 * The HTTP route table: guards every request passes first, then exact method + path
 * routes, then handlers that recognise their own paths (the REST facade), then the rest.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../rest/http-io.ts';

export type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** Answers the request itself, and returns true, when it must go no further. */
export type Guard = (req: IncomingMessage, res: ServerResponse, path: string) => boolean | Promise<boolean>;

/** Handles the paths it recognises; resolves false, leaving `res` untouched, for the others. */
export type Mount = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

interface Route {
  /** Absent: any method. */
  method?: string;
  /** The path without the query string. */
  path: string;
  guard?: Guard;
  handle: Handler;
}

export interface RouteTable {
  guards: readonly Guard[];
  routes: readonly Route[];
  /** Tried in order when no route matched. */
  mounts: readonly Mount[];
  /** Whatever no route or mount took. */
  fallback: Handler;
}

async function route(table: RouteTable, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  for (const guard of table.guards) if (await guard(req, res, path)) return;
  const match = table.routes.find((r) => r.path === path && (r.method === undefined || r.method === req.method));
  if (match) {
    if (match.guard && (await match.guard(req, res, path))) return;
    return match.handle(req, res);
  }
  for (const mount of table.mounts) if (await mount(req, res)) return;
  await table.fallback(req, res);
}

/** The server's request listener: a fault is logged and answered with a bare 500, never with its details. */
export function requestListener(table: RouteTable, onFault: (error: unknown) => void) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    route(table, req, res).catch((e: unknown) => {
      onFault(e);
      if (res.headersSent) res.destroy();
      else sendJson(res, 500, { errors: [{ message: 'Unexpected error.' }] });
    });
  };
}
