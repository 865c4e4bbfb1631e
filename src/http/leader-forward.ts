import type { IncomingMessage, ServerResponse } from 'node:http';
import { Kind, parse, type OperationDefinitionNode } from 'graphql';
import { sendJson } from '../rest/http-io.ts';

/** Set on a forwarded request: the leader (or a replica that stopped leading meanwhile) runs it itself, never forwards it again. */
export const FORWARDED_HEADER = 'x-lockkeeper-forwarded';
/** On the answer: the leader that ran the mutation. */
export const FORWARDED_TO_HEADER = 'x-lockkeeper-forwarded-to';

/** Failures before the request left this process: nothing ran on the leader. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/** Headers that belong to one hop, not to the request (RFC 9110 §7.6.1), and those the forward sets itself. */
const HOP_HEADERS = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authorization', 'content-length']);

export interface LeaderForwardDeps {
  /** Whether this replica leads now (then it runs everything itself). */
  leads(): boolean;
  /** The current leader's address (`http://host:port`), from the lease; null when none holds it. */
  leaderAddress(): Promise<string | null>;
  graphqlPath: string;
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
}

/** Whether a GraphQL-over-HTTP body asks for a mutation (any operation of a batch); false when it does not parse (yoga answers that). */
function asksForMutation(body: Buffer): boolean {
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    return false;
  }
  return (Array.isArray(payload) ? payload : [payload]).some((p) => {
    const { query, operationName } = (p ?? {}) as { query?: unknown; operationName?: unknown };
    if (typeof query !== 'string') return false;
    try {
      const operations = parse(query).definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
      const chosen =
        typeof operationName === 'string' ? operations.find((o) => o.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined;
      return chosen?.operation === 'mutation';
    } catch {
      return false;
    }
  });
}

/**
 * ha:R2, ha:R4: a client may send any mutation to any replica. A stand-by forwards a
 * mutation, whole and with its credentials, to the replica holding the lease and answers
 * with what the leader answered — as Neon's storage controller forwards requests to its
 * leader — so the mutations only the leader can carry out (rollouts, disabling a
 * maintenance, shard controls) work everywhere, and starts it could admit itself are
 * admitted by the leader under the same database checks. Queries and subscriptions stay
 * local (ha:R1). When no leader holds the lease, or it cannot be reached, the stand-by runs
 * the mutation itself: admissions still work, and what needs the leader answers
 * `UnavailableError`, as before.
 *
 * Returns true when it answered the request.
 */
export function leaderForward(deps: LeaderForwardDeps) {
  return async (req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<boolean> => {
    if (req.method !== 'POST' || req.headers[FORWARDED_HEADER] !== undefined || deps.leads() || !asksForMutation(body)) return false;
    const leader = await deps.leaderAddress().catch(() => null);
    if (!leader) return false;
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || HOP_HEADERS.has(name)) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    headers.set(FORWARDED_HEADER, '1');
    headers.append('x-forwarded-for', req.socket.remoteAddress ?? '');
    // The client's leaving ends the forward too (nothing waits for the leader's answer then).
    const gone = new AbortController();
    res.once('close', () => gone.abort());
    let answer: Response;
    try {
      answer = await fetch(new URL(deps.graphqlPath, leader), { method: 'POST', headers, body: new Uint8Array(body), signal: gone.signal, redirect: 'manual' });
    } catch (e) {
      const code = (e as { cause?: { code?: string } }).cause?.code;
      if (code && NOT_CONNECTED.has(code)) {
        deps.log.warn({ err: e, leader }, `the leader at ${leader} could not be reached: this stand-by runs the mutation itself`);
        return false;
      }
      // It may have reached the leader and run there: not run again here.
      if (!res.headersSent && !res.destroyed)
        sendJson(res, 502, {
          errors: [
            { message: `forwarded to the leader at ${leader}, no answer: look at the operation before asking again`, extensions: { code: 'BAD_GATEWAY' } },
          ],
        });
      return true;
    }
    const out: Record<string, string> = { [FORWARDED_TO_HEADER]: leader };
    answer.headers.forEach((value, name) => {
      if (!HOP_HEADERS.has(name) && name !== 'content-encoding') out[name] = value;
    });
    const payload = Buffer.from(await answer.arrayBuffer());
    res.writeHead(answer.status, { ...out, 'content-length': String(payload.length) });
    res.end(payload);
    return true;
  };
}
