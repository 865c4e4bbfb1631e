/* eslint-disable @typescript-eslint/no-explicit-any -- results are read as the documents select them; test/cli/documents.test.ts validates every document against schema.graphql (rollout:T6) */
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

/** Exit codes of rollout:T5, and 5: a drain or maintenance SUCCEEDED but left workloads on its node (not safe to restart). */
export const EXIT = { DONE: 0, ENDED_BADLY: 1, REFUSED: 2, UNREACHABLE: 3, PAUSED: 4, NOT_SAFE_TO_RESTART: 5 } as const;

/** A failure the command reports in one line and exits with. */
export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** A typed refusal (rollout:T5: exit 2, printed with its code and message). */
export function refused(result: { code?: string; message?: string; __typename?: string; blockers?: { id: string; reasons: string[] }[] }): CliError {
  const blockers = (result.blockers ?? []).map((b) => `\n  ${b.id}: ${b.reasons.join('; ')}`).join('');
  return new CliError(EXIT.REFUSED, `${result.code ?? result.__typename}: ${result.message ?? 'refused'}${blockers}`);
}

interface GraphQLResponse {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

const AUTH_CODES = new Set(['UNAUTHENTICATED', 'FORBIDDEN']);

/** rollout:T1: one gateway, over HTTP for queries and mutations and graphql-ws for watching. */
export class GatewayClient {
  private ws: Client | null = null;

  constructor(
    readonly url: string,
    private readonly token: string | undefined,
  ) {}

  async request<T = any>(document: string, variables: Record<string, unknown> = {}): Promise<T> {
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(this.token && { authorization: `Bearer ${this.token}` }) },
        body: JSON.stringify({ query: document, variables }),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(EXIT.UNREACHABLE, `cannot reach ${this.url}: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
    }
    let body: GraphQLResponse;
    try {
      body = (await res.json()) as GraphQLResponse;
    } catch {
      throw new CliError(EXIT.UNREACHABLE, `${this.url} answered ${res.status} ${res.statusText}, not GraphQL`);
    }
    const authError = body.errors?.find((e) => AUTH_CODES.has(e.extensions?.code ?? ''));
    if (res.status === 401 || res.status === 403 || authError) {
      throw new CliError(
        EXIT.UNREACHABLE,
        `${this.url} refused the call (${res.status}): ${authError?.message ?? body.errors?.[0]?.message ?? res.statusText}`,
      );
    }
    // Issue 27: the gateway answers, its database does not (a 503 before GraphQL ran, or fields
    // UNAVAILABLE naming it): the messages say "database unavailable"; try again later (exit 3).
    const unavailable = body.errors?.some((e) => e.extensions?.code === 'UNAVAILABLE');
    if (body.errors?.length && (res.status === 503 || unavailable)) throw new CliError(EXIT.UNREACHABLE, body.errors.map((e) => e.message).join('; '));
    if (body.errors?.length) throw new CliError(EXIT.REFUSED, body.errors.map((e) => e.message).join('; '));
    return body.data as T;
  }

  /** Follows a subscription until `onNext` returns true (done) or the server completes it. */
  subscribe<T>(document: string, variables: Record<string, unknown>, onNext: (data: T) => boolean | void): Promise<void> {
    this.ws ??= createClient({
      url: this.url.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: this.token ? { authorization: `Bearer ${this.token}` } : {},
      retryAttempts: 5,
      shouldRetry: () => true,
    });
    return new Promise<void>((resolve, reject) => {
      const stop = this.ws!.subscribe<T>(
        { query: document, variables },
        {
          next: ({ data, errors }) => {
            if (errors?.length) return reject(new CliError(EXIT.REFUSED, errors.map((e) => e.message).join('; ')));
            if (data && onNext(data as T) === true) {
              stop();
              resolve();
            }
          },
          error: (e) => reject(new CliError(EXIT.UNREACHABLE, `lost ${this.url}: ${e instanceof Error ? e.message : JSON.stringify(e)}`)),
          complete: () => resolve(),
        },
      );
    });
  }

  async close(): Promise<void> {
    await this.ws?.dispose();
  }
}
