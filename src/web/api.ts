import { createClient, type Client } from 'graphql-ws';
import { WEB_DOCUMENTS } from './documents.ts';

const TOKEN_KEY = 'lockkeeper.token';
const ENDPOINT = new URL('/graphql', location.href).toString();

/** The token lives in this tab's session storage only (rollout:W2). */
export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value: string) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/**
 * The gateway wants a token: authentication is on and none was given, or the one given is
 * wrong, revoked or expired. `message` is the gateway's, which says which (issue 31, point 4).
 */
export class NeedsToken extends Error {}

/** The gateway answered UNAVAILABLE naming its database (ha:DB5): an outage, retried, never a token problem. */
export class DatabaseUnavailable extends Error {
  constructor(
    readonly database: string,
    message: string,
  ) {
    super(message);
  }
}

/** What the token prompt says: which of missing, wrong, revoked or expired, in a sentence. */
export function tokenProblem(e: NeedsToken): string {
  const m = e.message;
  if (/revoked|deleted/.test(m)) return `This token has been revoked (${m}): paste another.`;
  if (/expired/.test(m)) return `This token has expired (${m}): paste another.`;
  if (token.get()) return `This token is not valid, wrong or mistyped (${m}): paste another.`;
  return 'Authentication is on: paste an API token.';
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- results are read as the documents select them
export async function gql<T = any>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const t = token.get();
  const res = await fetch(ENDPOINT, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(t && { authorization: `Bearer ${t}` }) },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json().catch(() => ({}))) as { data?: T; errors?: { message: string; extensions?: { code?: string; database?: string } }[] };
  const refused = body.errors?.find((e) => e.extensions?.code === 'UNAUTHENTICATED');
  if (res.status === 401 || refused) throw new NeedsToken(refused?.message ?? 'authentication required');
  // Partial data is not shown as if whole: the dashboard keeps its last complete answer instead (issue 27).
  const down = body.errors?.find((e) => e.extensions?.code === 'UNAVAILABLE' && e.extensions.database);
  if (down) throw new DatabaseUnavailable(down.extensions!.database!, down.message);
  if (body.errors?.length) throw new Error(body.errors.map((e) => e.message).join('; '));
  return body.data as T;
}

/**
 * rollout:W1: the event log, live over graphql-ws. When the socket drops, it connects
 * again and resumes after the last `seq` seen, so no change is missed.
 */
export function followEvents(onEvent: (seq: number) => void, onStatus: (live: boolean) => void, onRefused: (e: NeedsToken) => void): () => void {
  let after: number | null = null;
  let client: Client | null = null;
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  // dispose() waits for a connection under way, and rejects with its close event when the
  // gateway refuses it: expected here, never an uncaught error (issue 31, point 4).
  const dispose = () => Promise.resolve(client?.dispose()).catch(() => {});
  const stop = () => {
    stopped = true;
    clearTimeout(retry);
    void dispose();
  };
  const connect = () => {
    if (stopped) return;
    const t = token.get();
    client = createClient({
      url: ENDPOINT.replace(/^http/, 'ws'),
      retryAttempts: 0,
      connectionParams: t ? { authorization: `Bearer ${t}` } : {},
      on: { connected: () => onStatus(true) },
    });
    const again = (error?: unknown) => {
      // The gateway refused the token (close 4403), or ended the subscription when the token was revoked or expired: no retry, the prompt says why.
      const refusal = refusalOf(error);
      if (refusal) {
        stop();
        onStatus(false);
        onRefused(refusal);
        return;
      }
      onStatus(false);
      void dispose();
      clearTimeout(retry);
      retry = setTimeout(connect, 1000);
    };
    client.subscribe<{ eventLog: { seq: number } }>(
      { query: WEB_DOCUMENTS.events, variables: after === null ? {} : { after } },
      {
        next: ({ data, errors }) => {
          const refused = errors?.find((e) => e.extensions?.code === 'UNAUTHENTICATED');
          if (refused) return again(new NeedsToken(refused.message));
          if (!data) return;
          after = data.eventLog.seq;
          onEvent(after);
        },
        error: again,
        complete: again,
      },
    );
  };
  connect();
  return stop;
}

/** A close event or error that says the token was refused, as a NeedsToken; else null. */
function refusalOf(error: unknown): NeedsToken | null {
  if (error instanceof NeedsToken) return error;
  const close = error as { code?: number; reason?: string } | undefined;
  if (close && (close.code === 4403 || close.code === 4401)) return new NeedsToken(close.reason || 'authentication required');
  return null;
}
