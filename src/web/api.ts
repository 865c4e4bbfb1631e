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

/** The gateway wants a token (authentication is on and none, or a bad one, was given). */
export class NeedsToken extends Error {}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- results are read as the documents select them
export async function gql<T = any>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const t = token.get();
  const res = await fetch(ENDPOINT, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(t && { authorization: `Bearer ${t}` }) },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json().catch(() => ({}))) as { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
  if (res.status === 401 || body.errors?.some((e) => e.extensions?.code === 'UNAUTHENTICATED')) throw new NeedsToken();
  if (body.errors?.length) throw new Error(body.errors.map((e) => e.message).join('; '));
  return body.data as T;
}

/**
 * rollout:W1: the event log, live over graphql-ws. When the socket drops, it connects
 * again and resumes after the last `seq` seen, so no change is missed.
 */
export function followEvents(onEvent: (seq: number) => void, onStatus: (live: boolean) => void): () => void {
  let after: number | null = null;
  let client: Client | null = null;
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const connect = () => {
    if (stopped) return;
    const t = token.get();
    client = createClient({
      url: ENDPOINT.replace(/^http/, 'ws'),
      retryAttempts: 0,
      connectionParams: t ? { authorization: `Bearer ${t}` } : {},
      on: { connected: () => onStatus(true) },
    });
    const again = () => {
      onStatus(false);
      void client?.dispose();
      clearTimeout(retry);
      retry = setTimeout(connect, 1000);
    };
    client.subscribe<{ eventLog: { seq: number } }>(
      { query: WEB_DOCUMENTS.events, variables: after === null ? {} : { after } },
      {
        next: ({ data }) => {
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
  return () => {
    stopped = true;
    clearTimeout(retry);
    void client?.dispose();
  };
}
